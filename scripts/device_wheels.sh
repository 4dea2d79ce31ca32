#!/usr/bin/env bash
# Wheels of the project's dependencies that a device machine's image lacks (its Python 3.12 has torch, numpy, pandas,
# pyarrow, scipy, opencv and pyyaml of its own: /work/.library/device/KINDS.md), at the versions this .venv holds,
# downloaded into .wheels-py312/ (ignored through .git/info/exclude). A device call carries the folder
# (`carry: [".wheels-py312"]`) and runs `WHEELS=.wheels-py312 scripts/remote_batch.sh ...` (docs/paper-scale.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.wheels-py312
grep -qx "/$dest/" .git/info/exclude 2>/dev/null || echo "/$dest/" >> .git/info/exclude
specs=()
for name in gymnasium farama-notifications ale-py mujoco mujoco-core glfw pyopengl pydantic pydantic-core \
            annotated-types typing-inspection jsonschema referencing jsonschema-specifications rpds-py; do
  specs+=("$name==$(.venv/bin/python -c "from importlib.metadata import version; print(version('$name'))")")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$dest" "${specs[@]}"
du -sh "$dest"
