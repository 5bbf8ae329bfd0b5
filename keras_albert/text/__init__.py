"""Text: normalization, the SentencePiece and WordPiece tokenizer, character offsets, packing
and pretraining examples."""
