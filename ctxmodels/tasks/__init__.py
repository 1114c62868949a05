"""Task datasets for fine-tuning: what a task head learns to predict, with fixed train/dev/test splits.

Four built-in tasks come from the data at hand, and a user's own task from a file:

* ``pos``: the coarse part of speech (NOUN, PROPN, VERB, ADJ, ADV) of every content word of a SemCor sentence.
* ``ner``: proper-name types (person, location, organisation) as BIO tags on every word of a SemCor sentence.
* ``wsd:LEMMA`` (``wsd:bank``, ``wsd:run.v``): which WordNet sense one word of a SemCor sentence has.
* ``period``: in which of ELTeC's four time slots a paragraph's novel was published.
* a ``.tsv`` file (``text<TAB>label``) for sentence classification, one headed ``text_a<TAB>text_b<TAB>label`` for
  sentence-pair classification, a CoNLL-style file (``word<TAB>label``) for token labelling, or a SQuAD v1.1
  ``.json`` file for extractive question answering.

Every split is by document (a Brown file, a novel's author, a user's ``# doc:`` block): no document gives examples
to two splits, so a test score says how well the task carries over to texts the model has not seen, not how well it
remembers a text's names and topics. Documents go to the splits in a fixed seeded order, each to the split that is
furthest below its share of the examples (80/10/10), so the same spec always gives the same split, whatever seed a
run uses; ``max_examples`` only samples inside the splits. :attr:`TaskData.documents` records them.

Everything here reads local files and is cached per process; the core's heads (``training``) and the app's
analysis read :class:`TaskData` and never parse these files themselves.

The package, one job a module: :mod:`.data` (examples, :class:`TaskData`, :class:`TaskError`), :mod:`.splits`
(the split by document), :mod:`.semcor_tags` (``pos``, ``ner``), :mod:`.wsd`, :mod:`.period`, :mod:`.user_files`
(a user's .tsv / CoNLL file), :mod:`.squad` (a SQuAD v1.1 file and its scoring) and :mod:`.specs`
(:func:`load_task`: a spec -> its task, cached).
"""

from .data import FRACTIONS, KINDS, SPLIT_SEED, SPLITS, Example, TaskData, TaskError
from .period import PERIODS, default_corpus, metadata_path, period_of
from .specs import BUILTIN_TASKS, load_task
from .splits import split_groups
from .squad import QaExample, best_span, normalize_answer, read_squad_task, squad_scores
from .user_files import NO_LABEL, read_conll_task, read_pair_task, read_tsv_task
from .wsd import OTHER, wsd_lemmas

__all__ = ["BUILTIN_TASKS", "FRACTIONS", "KINDS", "NO_LABEL", "OTHER", "PERIODS", "SPLITS", "SPLIT_SEED", "Example",
           "QaExample", "TaskData", "TaskError", "best_span", "default_corpus", "load_task", "metadata_path",
           "normalize_answer", "period_of", "read_conll_task", "read_pair_task", "read_squad_task", "read_tsv_task",
           "split_groups", "squad_scores", "wsd_lemmas"]
