"""Text: normalization, the SentencePiece and WordPiece tokenizer, character offsets and packing
(pretraining examples are `keras_albert.pretraining.data`)."""
