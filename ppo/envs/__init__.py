"""Environment families: gymnasium's vector-observation tasks (MuJoCo batched), Atari under a protocol."""
