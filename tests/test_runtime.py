"""The table of settings that change no number (xling.runtime): it names real config keys, and the config
seen by params, result tables and the report loses exactly those keys."""

from pathlib import Path

import yaml

from xling.runtime import RUNTIME, computed, without_runtime

REPO = Path(__file__).resolve().parents[1]


def test_every_runtime_setting_is_a_documented_config_key():
    schema = yaml.safe_load((REPO / "schemas/config.schema.yaml").read_text())
    for block, keys in RUNTIME.items():
        node = schema
        for part in block.split("."):
            node = node["properties"][part]
        for key in keys:
            assert key in node["properties"], f"{block}.{key} is not in the schema"
            assert node["properties"][key].get("description"), f"{block}.{key} has no description"


def test_computed_leaves_out_the_runtime_keys_of_its_block():
    bert = {"hidden_size": 32, "micro_batch_size": 4, "threads": 8, "device": None, "log_every": 10}
    assert computed("bert", bert) == {"hidden_size": 32, "micro_batch_size": 4}
    assert computed("corpus", {"seed": 1, "threads": 2}) == {"seed": 1, "threads": 2}  # no runtime keys there


def test_without_runtime_cleans_every_depth_and_copies():
    config = {
        "run": "x",
        "retrieval": {"metric": "csls", "block": 64, "report_layer": 8},
        "language": {"batch_size": 8, "mean": "token", "sentence_retrieval": {"block": 9, "layer": 8}},
        "data": {"source": "real", "cache": "c", "download": {"retries": 1}, "europarl": {"max_pairs": 5}},
    }
    clean = without_runtime(config)
    assert clean == {
        "run": "x",
        "retrieval": {"metric": "csls", "report_layer": 8},
        "language": {"mean": "token", "sentence_retrieval": {"layer": 8}},
        "data": {"source": "real", "europarl": {"max_pairs": 5}},
    }
    clean["data"]["europarl"]["max_pairs"] = 6
    assert config["data"]["europarl"]["max_pairs"] == 5
