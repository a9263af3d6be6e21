"""The one task -> metric map of the zero-shot transfer tasks: the score each paper reports per task.

Fine-tuning selects its epoch on it, MDS its alpha, and the findings and the report show it, so they all read
this map. Pure Python, so the report's env (no torch, no conllu) imports it too.
"""

TASK_METRIC = {"xnli": "accuracy", "pos": "upos", "parsing": "las", "ner": "f1"}
