"""The one encoder: every BERT pass over text, and the hooks that act inside it.

xling.encode.encoder: Encoder.from_pretrained(...).encode(...) (wordpieces grouped into words by xling.data.words).
xling.encode.transforms: zero-mean and the mean-difference shift, on stored vectors and, through shift_layer (the
one forward hook), at a layer inside a forward pass.
"""
