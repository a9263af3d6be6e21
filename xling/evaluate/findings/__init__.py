from xling.evaluate.findings.cao import (CLAIMS, FAILS, HOLDS, NOT_MEASURED, TABLES, Criteria,  # noqa: F401
                                         bert_layer, judge_claims, read_tables, write_findings)
