"""Report sections for zero-shot transfer from English: XNLI by model, data size and window (Liu et al. 2020,
Figures 2, 4 and 6), XNLI with MDS and zero-mean (Liu et al. 2020, arXiv:2004.09205 Table 4), UD POS tagging and
dependency parsing with zero-mean and MDS (Liu et al. 2020, arXiv:2010.10041 §5), WikiAnn NER (beside Conneau et
al. 2020 Table 1) and the MDS weight alpha chosen on each language's dev split.

Every section reads one tidy table, `transfer` (results/<run>/eval/transfer.parquet, xling.evaluate.transfer):
one row per number, with the task, the model, the fine-tuning settings (freeze, train_transform, selection,
finetune_settings), the fine-tuning seed, the language, the split, the test-time transform (layer, alpha,
selected) and the metric; values in percent. Seeds are averaged (mean ± sample sd, the count of seeds shown);
every other setting is a table column, a row label, or a choice the section names (the split, the checkpoint
selection, the smallest freeze in the model comparison); a cell where anything but the seed varies stops the
report naming the column. Every language's number is shown whatever it is; XNLI cells below chance (three
balanced classes: one third) are flagged.

The package: `common` holds what the sections share (the table, labels, seed means, the figures declared); one
module per section, imported here in report order so that importing the package registers them: `xnli` (1),
`window` (2), `mds` (3), `tasks` (4-5: UD and NER), `alpha` (6, and the table of all numbers).
"""

# in report order: importing a section module registers its sections
from xling.report.transfer import xnli, window, mds, tasks, alpha  # noqa: F401  isort: skip
