"""Pretraining: the data (`data`: raw text → SOP/NSP pairs with n-gram masking → TFRecords →
`tf.data`)."""
