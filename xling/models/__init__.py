"""Models trained from scratch: static embeddings (GloVe, Word2Vec) and the BERT MLM trainer."""
