"""Training on top of an encoder: task heads (heads, the biaffine parser), fine-tuning for zero-shot transfer
(finetune) and alignment fine-tuning (align). Above xling.encode and xling.represent, below xling.evaluate."""
