"""The one encoder: every BERT pass over text, wordpieces grouped into words, hooks at a layer."""
