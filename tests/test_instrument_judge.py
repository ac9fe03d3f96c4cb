"""LLM judges on instruments other than the Mini-CEX: HIVMedQA's rubric on question-answer items (one JSON
object per answer, with the reference answer) and AgentClinic's 1-10 ratings on dialogues, against the fake
OpenAI-compatible server (real HTTP, the real openai client)."""

import json

import pytest
from django.core.management import call_command

from annotation.importers import import_dialogues
from annotation.instruments import install_shipped
from annotation.models import Corpus, Item, ScaleVersion
from scoring.judges import prompts
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult
from scoring.llm import limiter
from tests.test_judge import drain, start

CRITERIA = ["comprehension", "reasoning", "knowledge", "bias", "harm"]
QA_LINES = [
    {"id": "q1", "question": "How often should antiretroviral therapy be taken?",
     "answer": "Every day, at the same time, without breaks.", "reference": "Daily, without interruption.",
     "model": "model-A"},
    {"id": "q2", "question": "Which organism most likely causes watery diarrhoea in advanced HIV?",
     "answer": "Cryptosporidium parvum.", "reference": "Cryptosporidium parvum is the most likely organism.",
     "model": "model-B"},
    {"id": "q3", "question": "Should a patient disclose HIV status to a partner?",
     "answer": "Yes, with counselling support.", "model": "model-A"},  # no reference answer
]


@pytest.fixture
def hivmedqa(db):
    return install_shipped("hivmedqa-medgpt")[0]


@pytest.fixture
def qa_corpus(db):
    corpus = Corpus.objects.create(name="hiv answers")
    import_dialogues(corpus, [json.dumps(line) for line in QA_LINES])
    return corpus


@pytest.fixture
def configure(fake_llm, monkeypatch):
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")

    def make(version, mode=JudgeConfig.Mode.PER_DIALOGUE, name="rubric judge"):
        config = JudgeConfig.objects.create(
            name=name, base_url=fake_llm.base_url, api_key_env="LLM_KEY_MINICEX_TEST", model="fake-judge", mode=mode,
            prompt_set=prompts.default_prompt_set(version), timeout_seconds=2, max_attempts=3)
        limiter.reset(f"judge-{config.pk}")
        return config

    return make


def test_per_dialogue_run_on_the_hivmedqa_rubric_gets_one_json_object_per_answer(hivmedqa, qa_corpus, configure,
                                                                                 fake_llm):
    run = start(configure(hivmedqa), qa_corpus)
    drain(run)
    assert run.status == "succeeded" and len(fake_llm.chat_requests) == 3
    bodies = {}
    for request in fake_llm.chat_requests:
        user = request["json"]["messages"][1]["content"]
        bodies[next(line["id"] for line in QA_LINES if line["question"] in user)] = request["json"]
    schema = bodies["q1"]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == CRITERIA and schema["additionalProperties"] is False
    assert all(schema["properties"][code] == {"type": "number", "enum": [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5]}
               for code in CRITERIA)
    system = bodies["q1"]["messages"][0]["content"]
    assert system.startswith("Act as a senior clinician") and "reference (target) answer" in system
    user = bodies["q1"]["messages"][1]["content"]
    # HIVMedQA's shape: question, reference, the answer, then the criteria with their range and benchmarks.
    assert user.index("The question:") < user.index("The reference (target) answer:\nDaily, without interruption.")
    assert user.index("Daily, without") < user.index("The answer to evaluate:\nEvery day") < user.index(
        "Evaluation criteria")
    assert "1. comprehension: Reading comprehension" in user and "Score: a number from 0 to 5 in steps of 0.5" in user
    assert "0-1: the answer shows a clear misunderstanding" in user
    assert "reference" not in bodies["q3"]["messages"][1]["content"].split("Evaluation criteria")[0].lower()
    results = JudgeResult.objects.filter(run=run)
    assert results.count() == 15 and set(results.values_list("status", flat=True)) == {"done"}
    by_answer = {}
    for external_id, code, value in results.values_list("dialogue__external_id", "item__code", "value"):
        by_answer.setdefault(external_id, {})[code] = value
    content = json.loads(next(r for r in fake_llm.chat_requests if "Cryptosporidium" in
                              r["json"]["messages"][1]["content"])["content"])
    assert by_answer["q2"] == content  # the stored values are the judge's JSON object, criterion by criterion
    assert all(0 <= value <= 5 for values in by_answer.values() for value in values.values())


def test_per_item_run_asks_one_criterion_at_a_time_and_parses_the_point(hivmedqa, qa_corpus, configure, fake_llm):
    run = start(configure(hivmedqa, mode=JudgeConfig.Mode.PER_ITEM, name="per item"), qa_corpus,
                item_codes=["harm", "bias"])
    drain(run)
    assert run.status == "succeeded" and len(fake_llm.chat_requests) == 6
    user = fake_llm.chat_requests[0]["json"]["messages"][1]["content"]
    assert user.rstrip().endswith("give one sentence of reason.")
    assert "Criterion" in user and "Answer with a number from 0 to 5 in steps of 0.5" in user
    assert "response_format" not in fake_llm.chat_requests[0]["json"]
    values = list(JudgeResult.objects.filter(run=run).values_list("status", "value"))
    assert len(values) == 6 and all(status == "done" and 0 <= value <= 5 for status, value in values)


def test_scale_answers_outside_the_range_or_not_whole_are_unscored(hivmedqa):
    item = Item.objects.get(version=hivmedqa, code="harm")
    assert prompts.parse_item("4\nSafe advice.", item) == (4, "Safe advice.")
    assert prompts.parse_item("**5** (highest)", item)[0] == 5
    assert prompts.parse_item("7\nvery good", item)[0] is None
    assert prompts.parse_item("4.5\nalmost", item)[0] == 4.5  # a point of HIVMedQA's half-point scale
    assert prompts.parse_item("4.25\nalmost", item)[0] is None
    assert prompts.parse_item("Score: 4", item)[0] is None
    # keys of other items are not this item's score; a value off the scale leaves its item unscored, not the others
    assert prompts.parse_dialogue(json.dumps({code: 3 for code in CRITERIA}), [item]) == {"harm": 3}
    items = list(Item.objects.filter(version=hivmedqa, parent__isnull=True).order_by("order"))
    assert prompts.parse_dialogue(json.dumps({code: 3 for code in CRITERIA}), items) == {c: 3 for c in CRITERIA}
    assert prompts.parse_dialogue(json.dumps({**{code: 3 for code in CRITERIA}, "harm": 6}), items) == {
        c: 3 for c in CRITERIA if c != "harm"}
    assert prompts.parse_dialogue("Scores: none today.", items) is None


def test_a_judge_refuses_a_corpus_of_the_other_kind(hivmedqa, qa_corpus, configure):
    mini_cex = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    with pytest.raises(judging.RunError, match="rates dialogues, but corpus \"hiv answers\" holds answers"):
        judging.create_run(configure(mini_cex, name="mini-cex judge"), qa_corpus)


def test_agentclinic_ratings_are_judged_per_item_on_dialogues_without_the_comment_item(db, configure, fake_llm):
    version = install_shipped("agentclinic-ratings")[0]
    corpus = Corpus.objects.create(name="clinic dialogues")
    import_dialogues(corpus, [json.dumps({"id": "c1", "self_report": "I have a cough.", "turns": [
        {"role": "doctor", "text": "Since when?"}, {"role": "patient", "text": "Two weeks."}]})])
    prompt_set = prompts.default_prompt_set(version)
    assert prompt_set.name == "AgentClinic dialogue ratings judge (default)"
    assert not prompt_set.prompts.filter(item__code="comments").exists()  # free text is never judged
    question = prompt_set.prompts.get(item__code="empathy").question
    assert "in the dialogue above" in question and "Answer with a whole number from 1 to 10 (1 = lowest, " \
                                                  "10 = highest)" in question
    run = start(configure(version, mode=JudgeConfig.Mode.PER_ITEM, name="clinic"), corpus)
    drain(run)
    values = dict(JudgeResult.objects.filter(run=run).values_list("item__code", "value"))
    assert set(values) == {"confidence", "compliance", "consultation", "doctor", "patient", "measurement", "empathy"}
    assert all(1 <= v <= 10 for v in values.values())


def test_run_judge_takes_the_scale(hivmedqa, qa_corpus, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    call_command("run_judge", "--corpus", "hiv answers", "--model", "fake-judge", "--base-url", fake_llm.base_url,
                 "--api-key-env", "LLM_KEY_MINICEX_TEST", "--mode", "per-dialogue", "--scale", "hivmedqa-medgpt")
    config = JudgeConfig.objects.get()
    assert config.prompt_set.scale_version == hivmedqa and "hivmedqa-medgpt" in config.name
    assert JudgeResult.objects.filter(run__config=config).count() == 15
    with pytest.raises(Exception, match="No published scale 'nope'"):
        call_command("run_judge", "--corpus", "hiv answers", "--model", "m", "--scale", "nope")


def test_the_judge_report_on_a_rubric_without_binary_items_does_not_crash(hivmedqa, qa_corpus, configure,
                                                                          make_user, client, analyst):
    from annotation import labels
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.models import Assignment
    from scoring.judges.report import judge_vs_physicians

    rater = make_user("rater", "physician")
    campaign = create_campaign(name="Rubric", corpus=qa_corpus, scale_version=hivmedqa, overlap=1)
    add_rater(campaign, rater)
    assign(campaign)
    for assignment in Assignment.objects.filter(campaign=campaign):
        for item in hivmedqa.rating_items():
            labels.save_label(assignment, item.pk, 3, rater)
        labels.submit(assignment, rater)
    run = start(configure(hivmedqa), qa_corpus)
    drain(run)
    report = judge_vs_physicians(run, campaign, n_resamples=20)
    # the 0-5 criteria are compared too; one physician and three answers: no verdict, no ceiling
    assert [i["code"] for i in report["items"]] == CRITERIA and report["counts"]["dialogues_judged"] == 3
    assert {i["decision"]["verdict"] for i in report["items"]} == {"not enough data"}
    assert all(i["ceiling"]["weighted_kappa"]["value"] is None for i in report["items"])
    json.dumps(report, allow_nan=False)  # JSON-safe
    client.force_login(analyst)
    assert client.get(f"/judges/runs/{run.pk}/report/?campaign={campaign.pk}").status_code == 200
    export = client.get(f"/campaigns/{campaign.pk}/labels.csv")
    lines = b"".join(export.streaming_content if export.streaming else [export.content]).decode().splitlines()
    assert export.status_code == 200 and len(lines) == 1 + 15 + 15  # header, physician labels, judge labels
    assert {line.split(",")[2] for line in lines[1:]} == set(CRITERIA)
