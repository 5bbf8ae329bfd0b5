"""Pretraining data: raw text → SOP/NSP pairs with n-gram masking → TFRecords → `tf.data`.

Modules, in the order the data flows (imports point down this list):

    config.py      PretrainingDataConfig: how examples are made
    vocabulary.py  TokenizerLike (what is needed of a tokenizer) and its lookup tables
    records.py     the ONE record schema: original feature names, encode, decode, inspect, count
    documents.py   inputs (files, directories, globs) → documents → sentences
    masking.py     n-gram whole-word masking, as examples are written
    pairs.py       a document's sentences → SOP/NSP pairs → masked examples
    summary.py     what a run read, made and skipped
    examples.py    one document → its keyed records: the unit of work of both engines
    writer.py      the local engine, a worker pool and the sharded writer:
                   `create_pretraining_data`
    beam.py        the Beam engine, for a corpus beyond one machine:
                   `create_pretraining_data_beam` (imports apache_beam; not imported here)
    dataset.py     the `tf.data` reader for `model.fit` and in-graph dynamic masking

`dataset` imports TensorFlow; the rest import it only when writing or reading records.
"""

from keras_albert.pretraining.data.config import PretrainingDataConfig
from keras_albert.pretraining.data.documents import Document, expand_inputs, iter_documents
from keras_albert.pretraining.data.examples import shard_paths
from keras_albert.pretraining.data.records import (
    PretrainingExample,
    RecordLayout,
    count_records,
    decode_record,
    encode_example,
    inspect_records,
)
from keras_albert.pretraining.data.summary import PretrainingDataSummary
from keras_albert.pretraining.data.vocabulary import TokenizerLike
from keras_albert.pretraining.data.writer import create_pretraining_data

__all__ = [
    "Document",
    "PretrainingDataConfig",
    "PretrainingDataSummary",
    "PretrainingExample",
    "RecordLayout",
    "TokenizerLike",
    "count_records",
    "create_pretraining_data",
    "decode_record",
    "encode_example",
    "expand_inputs",
    "inspect_records",
    "iter_documents",
    "shard_paths",
]
