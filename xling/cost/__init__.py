"""What a run will cost before it is launched (`python -m xling.cost`, `make cost`): a tool on top of the
workflow, never imported by the Snakefile or by the library below it."""
