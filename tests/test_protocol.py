"""The protocol table (resources/protocol.yaml, xling.protocol): every default of config.yaml and the schema is
the paper's value where a paper states one, or the table records why not; every config key it names exists; a
planted default that differs from a paper fails; a run's deviations from each paper are listed with reasons."""

import copy

import pytest
from plan_configs import HELPERS, SCHEMA, make_config

from xling import protocol
from xling.data.sources import Sources
from xling.plan.data import RealData, low_resource_treebanks
from xling.plan.study import Plan


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


def real_plan(config: dict) -> Plan:
    """The plan of `config` (config.yaml with defaults) over the real sources it names, as rules/sources.smk
    builds them (no data is read: resources/sources.yaml says which language has which dataset)."""
    sources, langs = Sources(config["data"]), config["languages"]
    treebanked = [lang for lang in sources.available("ud", langs) if sources.treebanks(lang)]
    real = RealData(
        {name: sources.available(name, langs) for name in sources.datasets},
        sources.parallel_sources(langs[1:]),
        treebanks={lang: sources.treebanks(lang) for lang in treebanked},
        splits={lang: sources.ud_splits(lang) for lang in treebanked},
        low_resource=low_resource_treebanks(config),
    )
    return Plan(config, real, SCHEMA, HELPERS)


def cao_dev_languages(plan: Plan):
    """The languages whose dev sets select the XNLI fine-tuning (f0-cao) of each model aligned on the
    five-language sizes and of each base, sorted: one list where all agree, else a mapping model -> list."""
    aligned = [lm for lm in plan.aligned_models() if lm.split("/")[1].isdigit()]
    models = aligned + sorted({lm.split("/", 2)[2] for lm in aligned})
    found = {lm: sorted(plan.selection_langs("xnli", lm, "f0-cao")) for lm in models}
    distinct = {tuple(langs) for langs in found.values()}
    return list(distinct.pop()) if len(distinct) == 1 else found


#: where code, not a config key, fixes a scope: the row's `scope` -> how the plan of config.yaml says it
SCOPES = {
    "cao2020.xnli_dev_languages": cao_dev_languages,
    "cao2020.analysis_languages": lambda plan: sorted(plan.align_eval_langs()),
    "liu2020short.parsing_low_resource_languages": lambda plan: sorted(plan.low_resource_langs("parsing")),
}


def read_scopes(plan: Plan) -> dict:
    return {name: read(plan) for name, read in SCOPES.items()}


def test_every_setting_is_its_rows_value_and_every_difference_from_a_paper_has_a_reason(study):
    table, schema, config = study
    assert protocol.problems(table, schema, config) == []


@pytest.mark.parametrize(
    "key, value, rows",
    [
        ("ablation.code_switch.dictionary", "test", ["conneau2020.extra_anchors_dictionary"]),  # MUSE's test words
        ("bert.max_steps", 10, ["conneau2020.budget", "liu2020full.bert_budget"]),
        ("transfer.alphas", [5.0], ["liu2020full.mds_alphas"]),  # a "not stated" row
        ("monolingual.window", 256, ["conneau2020.monolingual_window"]),
        ("transfer.xnli.languages", ["en", "de"], ["liu2020full.finetune_recipe"]),  # inside an object row
        (
            "language.alphas",
            [1, 2, 3, 50],
            [
                "liu2020full.token_translation_alphas",  # an extra value
                "liu2020short.translation_alphas",
            ],
        ),
        (
            "language.alphas",
            [3, 2, 1, 0, -1],
            [
                "liu2020full.token_translation_alphas",  # the same values reordered
                "liu2020short.translation_alphas",
            ],
        ),
        ("transfer.ner_repair", 1, ["conneau2020.ner_repair"]),  # 1 is not true
        (
            "transfer.parsing.low_resource.alpha",
            1.0,
            [
                "liu2020short.parsing_low_resource_alpha",  # a "not stated" row
                "liu2020short.parsing_recipe",
            ],
        ),
    ],
)
def test_a_planted_value_fails_naming_the_key_and_its_rows(study, key, value, rows):
    table, schema, config = study
    found = protocol.problems(table, schema, planted(config, key, value))
    assert sorted(line.split(":")[0] for line in found) == rows
    assert all(f"{key} is {value!r}, the row records ours_value" in line for line in found)


def test_a_planted_set_of_low_resource_treebanks_fails_on_its_rows_and_the_plans_scope(study):
    """Liu et al. short §5.2's six treebanks without dev: another set fails the rows that record it, and a plan
    that parses other low-resource languages fails the scope row read from it."""
    table, schema, config = study
    one = {"kk": ["UD_Kazakh-KTB"]}
    found = protocol.problems(table, schema, planted(config, "transfer.parsing.low_resource.treebanks", one))
    assert sorted({line.split(":")[0] for line in found}) == [
        "liu2020short.parsing_recipe",
        "liu2020short.parsing_treebanks",
    ]
    assert any(
        line.startswith("liu2020short.parsing_treebanks: transfer.parsing.low_resource.treebanks.ga is")
        for line in found
    )
    plan = real_plan(make_config(transfer={"parsing": {"low_resource": {"treebanks": one}}}))
    scope = "liu2020short.parsing_low_resource_languages"
    assert [
        line.split(":")[0]
        for line in protocol.problems(table, schema, config, scopes=read_scopes(plan))
        if line.startswith(scope)
    ] == [scope]


def test_a_deviation_is_made_by_editing_its_row_and_needs_a_reason_where_a_paper_states_the_value(study):
    table, schema, config = study
    run = planted(config, "alignment.finetune.learning_rate", 1.0e-4)
    edited = copy.deepcopy(table)
    entry = next(e for e in edited["settings"] if e["id"] == "cao2020.align_learning_rate")
    entry["ours_value"] = 1.0e-4
    assert protocol.problems(edited, schema, run) == [
        "cao2020.align_learning_rate: alignment.finetune.learning_rate is 0.0001, the paper (cao2020 A.1) states "
        "5e-05, and no reason is recorded"
    ]
    entry["reason"] = "a planted reason"
    assert protocol.problems(edited, schema, run) == []
    found = protocol.problems(
        table, schema, planted(config, "languages", [lang for lang in config["languages"] if lang != "sw"])
    )
    assert [line.split(":")[0] for line in found] == ["liu2020full.languages"]


def test_a_planted_schema_default_fails(study):
    table, schema, config = study
    schema = copy.deepcopy(schema)
    schema["properties"]["alignment"]["properties"]["xnli"]["properties"]["epochs"]["default"] = 2
    assert protocol.problems(table, schema, config) == [
        "cao2020.xnli_epochs: alignment.xnli.epochs is 2, the row records ours_value 3: a deviation is made only by "
        "editing this row of resources/protocol.yaml (with its reason)"
    ]


def test_every_setting_has_a_row_or_a_reason_no_paper_speaks_to_it(study):
    table, schema, config = study
    without = {**table, "settings": [e for e in table["settings"] if e["id"] != "conneau2020.cka_random_seed"]}
    assert protocol.problems(without, schema, config) == [
        "cka.random_seed (= 1) has no row: add one to resources/protocol.yaml's settings with `config_key: "
        "cka.random_seed` and `ours_value: 1` (paper_value: not stated where no paper states it), or list it under "
        "`unspoken` with a one-line reason if it changes no number"
    ]
    grown = copy.deepcopy(schema)
    grown["properties"]["cka"]["properties"]["new_knob"] = {"type": "array", "default": ["a", "b"]}
    (line,) = protocol.problems(table, grown, config)
    assert line.startswith("cka.new_knob (= [a, b]) has no row") and "`ours_value: [a, b]`" in line
    spoken = {**table, "unspoken": {k: v for k, v in table["unspoken"].items() if k != "language.samples"}}
    assert [line.split(" (= ")[0] for line in protocol.problems(spoken, schema, config)] == ["language.samples"]
    assert protocol.problems({**table, "unspoken": {**table["unspoken"], "run": ""}}, schema, config) == [
        "unspoken run: give the one-line reason no paper speaks to it"
    ]


def test_a_row_without_its_value_says_the_line_to_add(study):
    """The format a new row (in the table's earlier format) needs: the failure names the row and the line."""
    table, schema, config = study
    bare = copy.deepcopy(table)
    for entry in bare["settings"]:
        if entry["id"] in ("cao2020.languages", "cao2020.xnli_dev_languages"):
            del entry["ours_value"]
    assert protocol.problems(bare, schema, config) == [
        "cao2020.languages: no ours_value; add `ours_value: [bg, de, el, es, fr]` (the value of "
        "alignment.finetune.languages now)"
    ]
    found = protocol.problems(bare, schema, config, scopes={"cao2020.xnli_dev_languages": ["de", "en"]})
    assert found[1] == (
        "cao2020.xnli_dev_languages: no ours_value; add `ours_value: [de, en]` (the value of the "
        "plan's cao2020.xnli_dev_languages now)"
    )


def test_every_scope_row_has_a_reader_and_every_reader_a_row(study):
    table, _, _ = study
    assert sorted(e["scope"] for e in table["settings"] if e.get("scope")) == sorted(SCOPES)


@pytest.fixture(scope="module")
def study_plan(study):
    return real_plan(make_config())


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_a_scope_the_code_fixes_is_its_rows_value(study, study_plan, scope):
    table, schema, config = study
    (entry,) = [e for e in table["settings"] if e.get("scope") == scope]
    assert protocol.problems(table, schema, config, scopes={scope: SCOPES[scope](study_plan)}) == []


def test_a_planted_fifteen_language_dev_average_fails_the_scope_check(study, study_plan, monkeypatch):
    table, schema, config = study
    fifteen = list(config["languages"])
    monkeypatch.setattr(study_plan, "selection_langs", lambda task, lm=None, variant=None: fifteen)
    scopes = read_scopes(study_plan)
    assert scopes["cao2020.xnli_dev_languages"] == sorted(fifteen)
    found = [
        line
        for line in protocol.problems(table, schema, config, scopes=scopes)
        if line.startswith("cao2020.xnli_dev_languages:")
    ]
    assert found == [
        f"cao2020.xnli_dev_languages: the plan's cao2020.xnli_dev_languages is {sorted(fifteen)!r}, the "
        f"row records ours_value ['bg', 'de', 'el', 'en', 'es', 'fr']: a deviation is made only by "
        f"editing this row of resources/protocol.yaml (with its reason)"
    ]


def test_exact_comparison_by_hand():
    assert protocol.same([1, 2], [1, 2]) and not protocol.same([1, 2], [2, 1]) and not protocol.same([1, 2], [1, 2, 3])
    assert protocol.same(1, 1.0) and not protocol.same(True, 1) and not protocol.same(None, False)
    assert protocol.same({"a": [1]}, {"a": [1]}) and not protocol.same({"a": 1}, {"a": 1, "b": None})
    assert protocol.differing({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}}, "k") == [("k.a.c", 2, 3)]
    unspoken = {"*.threads": "r", "data.cache": "r"}
    assert protocol.is_unspoken("glove.threads", unspoken) and protocol.is_unspoken(
        "alignment.finetune.threads", unspoken
    )
    assert protocol.is_unspoken("data.cache.x", unspoken) and not protocol.is_unspoken("data.cached", unspoken)
    assert not protocol.is_unspoken("glove.threads_x", unspoken)
    assert protocol.value_at({"g": {"dim": 3, "threads": 8}}, "g", unspoken) == {"dim": 3}
    # the settings that change no number (xling.runtime.RUNTIME) need no pattern
    assert protocol.is_unspoken("bert.device", {}) and protocol.is_unspoken("data.download.retries", {})
    assert not protocol.is_unspoken("bert.seed", {}) and not protocol.is_unspoken("monolingual.bert.threads", {})


def test_a_todo_reason_whose_value_became_the_papers_is_stale(study):
    """On an entry of its own, so that the test outlives the table's last TODO."""
    table, schema, config = study
    table = {
        **table,
        "settings": [
            *table["settings"],
            {
                "id": "conneau2020.planted",
                "paper": "conneau2020",
                "experiment": "every model",
                "section": "§3",
                "setting": "linear warm-up steps",
                "paper_value": 30000,
                "config_key": "bert.warmup_steps",
                "ours_value": 10000,
                "reason": "TODO(issue 23): default to change",
            },
        ],
    }
    assert protocol.problems(table, schema, config) == []  # config.yaml's 10,000 differs, with the TODO reason
    table["settings"][-1]["ours_value"] = 30000
    found = protocol.problems(table, schema, planted(config, "bert.warmup_steps", 30000))
    assert [line for line in found if line.startswith("conneau2020.planted")] == [
        "conneau2020.planted: bert.warmup_steps is the paper's 30000 now; remove the TODO reason"
    ]


def test_every_config_key_exists_in_the_schema_and_planned_keys_do_not_yet(study):
    table, schema, config = study
    for entry in table["settings"]:
        if entry["config_key"]:
            assert protocol.in_schema(schema, entry["config_key"], open_objects=True), entry["id"]
    bad = copy.deepcopy(table)
    bad["settings"][0] = {**bad["settings"][0], "config_key": "alignment.no_such_key"}
    assert protocol.problems(bad, schema, config)[0] == (
        f"{bad['settings'][0]['id']}: config key alignment.no_such_key is not in the schema or config.yaml"
    )
    # a planned key (on an entry of its own: the table's last one became a config key) that the schema grows
    planned = {
        **table,
        "settings": [
            *table["settings"],
            {
                "id": "conneau2020.planted_key",
                "paper": "conneau2020",
                "experiment": "every model",
                "section": "§3",
                "setting": "a future setting",
                "paper_value": "not stated",
                "config_key": None,
                "planned_key": "cka.future_setting",
                "ours": "nothing yet",
            },
        ],
    }
    assert protocol.problems(planned, schema, config) == []
    grown = copy.deepcopy(schema)
    grown["properties"]["cka"]["properties"]["future_setting"] = {"type": "integer", "default": 1}
    assert protocol.problems(planned, grown, config)[0] == (
        "conneau2020.planted_key: planned key cka.future_setting is in the schema now: name it as config_key"
    )


def test_entries_without_a_config_key_say_what_the_code_does(study):
    table, schema, config = study
    bad = copy.deepcopy(table)
    entry = next(e for e in bad["settings"] if e["id"] == "cao2020.intersection")
    del entry["same"]
    assert protocol.problems(bad, schema, config) == [
        "cao2020.intersection: the code's setting (xling.data.alignment.word_pairs (one_to_one of the "
        "intersection)) differs from the paper's (the one-to-one links of the intersection of both directions) "
        "without a reason (or `same: true`)"
    ]


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
    rows = {
        (row["paper"], row["setting"]): row
        for row in protocol.deviations(config, schema=schema, protocol=table, defaults=config)
    }
    assert all(not row["reason"].startswith("set by this run") for row in rows.values())
    assert (
        rows[("liu2020full", "BERT's depth and pretraining budget (steps, batch, learning rate, schedule)")]["status"]
        == protocol.NOT_STATED
    )
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
        ["cosine", "margin (language.sentence_retrieval.bucc_score)", "set by this run"]
    ]
    unstated = tables["cao2020: not stated by the paper"]
    assert any(row[0].startswith("fast_align's settings") for row in unstated)
    untouched = protocol_blocks(
        protocol.deviations(config, schema=schema, protocol=table, defaults=config), table["papers"]
    )
    assert not any(
        "set by this run" in row[3]
        for block in untouched
        if block["kind"] == "table" and block["title"].endswith("differs")
        for row in block["rows"]
    )


def test_protocol_settings_are_the_named_keys_only():
    """The report's protocol params: the values of the plain keys the table names, nested as in the config;
    keys it does not name (a data location) and keys the run lacks are left out."""
    table = {
        "settings": [
            {"config_key": "bert.hidden_size"},
            {"config_key": "window"},
            {"config_key": "absent.key"},
            {"config_key": None},
            {"config_key": "bert.layers[0]"},
        ]
    }
    config = {"bert": {"hidden_size": 768, "lr": 1e-4}, "window": 5, "data": {"root": "/somewhere"}}
    assert protocol.protocol_settings(config, table) == {"bert": {"hidden_size": 768}, "window": 5}
