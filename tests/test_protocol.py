"""The protocol table (resources/protocol.yaml, xling.protocol): every default of config.yaml and the schema is
the paper's value where a paper states one, or the table records why not; every config key it names exists; a
planted default that differs from a paper fails; a run's deviations from each paper are listed with reasons."""

import copy

import pytest

from xling import protocol


@pytest.fixture(scope="module")
def study():
    """The protocol table, the schema and config.yaml as they are in the repository."""
    return protocol.load_protocol(), protocol.load_yaml(protocol.SCHEMA), protocol.load_yaml(protocol.CONFIG)


def planted(config: dict, key: str, value):
    """A copy of config with the dotted key set to value."""
    config = copy.deepcopy(config)
    *parents, last = key.split(".")
    node = config
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return config


def test_every_default_is_the_papers_or_records_why_not(study):
    table, schema, config = study
    assert protocol.problems(table, schema, config) == []


def test_a_planted_config_default_that_differs_from_the_paper_fails(study):
    table, schema, config = study
    found = protocol.problems(table, schema, planted(config, "alignment.finetune.learning_rate", 1.0e-4))
    assert found == ["cao2020.align_learning_rate: alignment.finetune.learning_rate defaults to 0.0001, the paper "
                     "(cao2020 A.1) states 5e-05, and no reason is recorded"]
    found = protocol.problems(table, schema, planted(config, "languages", [lang for lang in config["languages"]
                                                                              if lang != "sw"]))
    assert [line.split(":")[0] for line in found] == ["liu2020full.languages"]


def test_a_planted_schema_default_that_differs_from_the_paper_fails(study):
    table, schema, config = study
    schema = copy.deepcopy(schema)
    schema["properties"]["alignment"]["properties"]["xnli"]["properties"]["epochs"]["default"] = 2
    found = protocol.problems(table, schema, config)
    assert [line.split(":")[0] for line in found] == ["cao2020.xnli_epochs"]
    assert "alignment.xnli.epochs defaults to 2" in found[0]


def test_a_todo_reason_whose_default_became_the_papers_is_stale(study):
    """On an entry of its own, so that the test outlives the table's last TODO."""
    table, schema, config = study
    table = {**table, "settings": [*table["settings"], {
        "id": "conneau2020.planted", "paper": "conneau2020", "experiment": "every model", "section": "§3",
        "setting": "linear warm-up steps", "paper_value": 30000, "config_key": "bert.warmup_steps",
        "reason": "TODO(issue 23): default to change"}]}
    assert protocol.problems(table, schema, config) == []  # config.yaml's 10,000 differs, with the TODO reason
    found = protocol.problems(table, schema, planted(config, "bert.warmup_steps", 30000))
    assert found == ["conneau2020.planted: bert.warmup_steps is the paper's 30000 now; remove the TODO reason"]


def test_every_config_key_exists_in_the_schema_and_planned_keys_do_not_yet(study):
    table, schema, config = study
    for entry in table["settings"]:
        if entry["config_key"]:
            assert protocol.in_schema(schema, entry["config_key"], open_objects=True), entry["id"]
    bad = copy.deepcopy(table)
    bad["settings"][0] = {**bad["settings"][0], "config_key": "alignment.no_such_key"}
    assert protocol.problems(bad, schema, config) == [
        f"{bad['settings'][0]['id']}: config key alignment.no_such_key is not in the schema or config.yaml"]
    # a planned key (on an entry of its own: the table's last one became a config key) that the schema grows
    planned = {**table, "settings": [*table["settings"], {
        "id": "conneau2020.planted_key", "paper": "conneau2020", "experiment": "every model", "section": "§3",
        "setting": "a future setting", "paper_value": "not stated", "config_key": None,
        "planned_key": "bert.future_setting", "ours": "nothing yet"}]}
    assert protocol.problems(planned, schema, config) == []
    grown = copy.deepcopy(schema)
    grown["properties"]["bert"]["properties"]["future_setting"] = {"type": "integer", "default": 1}
    assert protocol.problems(planned, grown, config) == [
        "conneau2020.planted_key: planned key bert.future_setting is in the schema now: name it as config_key"]


def test_entries_without_a_config_key_say_what_the_code_does(study):
    table, schema, config = study
    bad = copy.deepcopy(table)
    entry = next(e for e in bad["settings"] if e["id"] == "cao2020.intersection")
    del entry["same"]
    assert protocol.problems(bad, schema, config) == [
        "cao2020.intersection: the code's setting (xling.data.alignment.word_pairs (one_to_one of the "
        "intersection)) differs from the paper's (the one-to-one links of the intersection of both directions) "
        "without a reason (or `same: true`)"]


def test_schema_defaults_follow_refs_and_fill_objects_the_config_sets(study):
    _, schema, _ = study
    settings = protocol.settled({"transfer": {"ner": {"epochs": 10}}}, schema)
    assert protocol.lookup(settings, "transfer.xnli.epochs") == 3  # definitions/finetune through $ref
    assert protocol.lookup(settings, "transfer.ner.epochs") == 10
    assert protocol.lookup(settings, "transfer.ner.batch_size") == 32  # filled beside the config's key
    assert protocol.lookup(settings, "alignment.finetune.betas") == [0.9, 0.98]
    with pytest.raises(KeyError, match="alignment.no_such_key"):
        protocol.lookup(settings, "alignment.no_such_key")


def test_comparisons_by_hand():
    assert protocol.matches({"paper_value": [1, 2]}, [1, 2]) and not protocol.matches({"paper_value": [1, 2]}, [2, 1])
    assert protocol.matches({"paper_value": [1, 2], "compare": "set"}, [2, 1])
    assert protocol.matches({"paper_value": [1, 2], "compare": "subset"}, [0, 2, 1])
    assert not protocol.matches({"paper_value": [1, 2], "compare": "subset"}, [1])
    assert protocol.matches({"paper_value": "five", "as_config": None}, None)


def test_deviations_of_a_run_name_its_own_changes_and_the_recorded_reasons(study):
    table, schema, config = study
    rows = {(row["paper"], row["setting"]): row for row in protocol.deviations(config, schema=schema, protocol=table,
                                                                               defaults=config)}
    assert all(not row["reason"].startswith("set by this run") for row in rows.values())
    assert rows[("liu2020full", "BERT's depth and pretraining budget (steps, batch, learning rate, schedule)")][
        "status"] == protocol.NOT_STATED
    todo = [(e["paper"], e["setting"]) for e in table["settings"] if str(e.get("reason", "")).startswith(protocol.TODO)]
    assert all(rows[key]["reason"].startswith(protocol.TODO) for key in todo)
    assert rows[("cao2020", "how the rotation baselines enter XNLI")]["reason"].startswith("the paper does not say")
    assert ("cao2020", "learning rate") not in rows
    run = planted(config, "alignment.finetune.learning_rate", 1.0e-4)
    rows = protocol.deviations(run, schema=schema, protocol=table, defaults=config)
    (changed,) = [row for row in rows if row["config_key"] == "alignment.finetune.learning_rate"]
    assert (changed["ours"], changed["paper_value"], changed["reason"]) == (1.0e-4, 5.0e-5, "set by this run")


def test_the_report_section_lists_each_papers_differences_and_unstated_settings(study):
    """The "Protocol and deviations" section (xling.report.protocol): a run that changes a default which is the
    paper's shows it as "set by this run"; the settings a paper does not state are listed with ours."""
    from xling.report.protocol import protocol_blocks

    table, schema, config = study
    run = planted(config, "language.sentence_retrieval.bucc_score", "margin")
    rows = protocol.deviations(run, schema=schema, protocol=table, defaults=config)
    blocks = protocol_blocks(rows, table["papers"])
    tables = {block["title"]: block["rows"] for block in blocks if block["kind"] == "table"}
    differs = tables["liu2020short: where this run differs"]
    assert [row[1:] for row in differs if row[0].startswith("similarity")] == [
        ["cosine", "margin (language.sentence_retrieval.bucc_score)", "set by this run"]]
    unstated = tables["cao2020: not stated by the paper"]
    assert any(row[0].startswith("fast_align's settings") for row in unstated)
    untouched = protocol_blocks(protocol.deviations(config, schema=schema, protocol=table, defaults=config),
                                table["papers"])
    assert not any("set by this run" in row[3] for block in untouched if block["kind"] == "table"
                   and block["title"].endswith("differs") for row in block["rows"])


def test_protocol_settings_are_the_named_keys_only():
    """The report's protocol params: the values of the plain keys the table names, nested as in the config;
    keys it does not name (a data location) and keys the run lacks are left out."""
    table = {"settings": [{"config_key": "bert.hidden_size"}, {"config_key": "window"},
                          {"config_key": "absent.key"}, {"config_key": None}, {"config_key": "bert.layers[0]"}]}
    config = {"bert": {"hidden_size": 768, "lr": 1e-4}, "window": 5, "data": {"root": "/somewhere"}}
    assert protocol.protocol_settings(config, table) == {"bert": {"hidden_size": 768}, "window": 5}
