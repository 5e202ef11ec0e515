"""Content words, where the checks have always read them from (`qagen.corpus.words`: the evaluator's
judge reads them too, and evaluation never imports generation)."""

from qagen.corpus.words import content_words as content_words
from qagen.corpus.words import stopwords as stopwords
