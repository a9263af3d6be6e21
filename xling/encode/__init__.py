"""The one encoder: every BERT pass over text, wordpieces grouped into words, hooks at a layer.

xling.encode.words: the one wordpiece -> word grouping (pure Python; the data rules count words with it).
xling.encode.encoder: Encoder.from_pretrained(...).encode(...) (imports torch; kept out of this file so that
importing xling.encode.words does not).
"""
