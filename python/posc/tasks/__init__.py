"""posc's tasks in Python: tokenisation, channels and problems of addition
(addition.py) and of the long-context documents (documents.py, the
generator in document_generator.py, model input in document_sequences.py,
the evaluation protocol in protocol.py)."""
from . import addition, document_generator, document_sequences, documents, protocol
from .addition import AdditionTokenizer, Problem
from .batch import CHANNEL_COUNT, Batch, ChannelLabels, Sequence, make_batch, randomize_channels
from .document_generator import generate
from .documents import DocumentSpec

__all__ = ["addition", "document_generator", "document_sequences", "documents", "protocol", "AdditionTokenizer",
           "Problem", "CHANNEL_COUNT", "Batch", "ChannelLabels", "Sequence", "make_batch", "randomize_channels",
           "generate", "DocumentSpec"]
