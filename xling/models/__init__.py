"""Models trained from scratch: static embeddings (GloVe, Word2Vec), the BERT MLM trainer and its ablations,
checkpoints."""
