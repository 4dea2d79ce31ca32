"""What a run is, read from files: errors, YAML, settings, the algorithm registry, the run config, its schema,
Atari protocols, presets and variants. The lowest layer: no torch code."""
