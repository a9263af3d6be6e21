"""Models trained from scratch and how they are loaded: static embeddings (GloVe, Word2Vec), the BERT MLM trainer
and its ablations, checkpoints, and the one BERT loader (pretrained)."""
