"""Synthetic data in the shape of a published HIVMedQA set (Cardenal-Antolin et al., HIVMedQA): question-answer items
of three models x 30 questions x 5 replicates (each model answers every question five times), an LLM judge's five
0-5 MedGPT scores per answer given as HIVMedQA's judge writes them (a fenced ```json block with "question 1" ..
"question 5", scores as 4, "4" or 4.5, plus "overall score" and "reason"), and physicians' labels on part of the
answers. Everything is made up here, seeded; nothing is anyone's judgement.

``bias`` is near-constant, as in the paper: 98% of the judge's and the physicians' scores are 5.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

MODELS = ("model-a", "model-b", "model-c")
QUESTIONS = 30
REPLICATES = 5
CRITERIA = ("comprehension", "reasoning", "knowledge", "bias", "harm")
JUDGE = "MedGPT judge"
JUDGE_MODEL = "gpt-4o-2024-08-06"
PHYSICIANS = ("dr_ahn", "dr_berg", "dr_chen")
MODEL_EFFECT = {"model-a": 0.6, "model-b": 0.0, "model-c": -0.6}


def answer_id(model: str, question: int, replicate: int) -> str:
    return f"{model}-q{question:02d}-r{replicate}"


def answers() -> list[dict]:
    """The question-answer lines for ``import_dialogues``, with their case and replicate."""
    out = []
    for model in MODELS:
        for q in range(1, QUESTIONS + 1):
            for r in range(1, REPLICATES + 1):
                out.append({"id": answer_id(model, q, r), "question": f"HIV question {q}: which regimen when ...?",
                            "answer": f"{model} answer {r} to question {q}.",
                            "reference": f"Reference answer to question {q}.", "model": model, "language": "en",
                            "case": f"q{q:02d}", "replicate": r})
    return out


def answers_jsonl() -> list[str]:
    return [json.dumps(line) for line in answers()]


def judge_scores(seed: int = 11) -> dict[str, dict[str, float]]:
    """answer id -> criterion -> score on the 0-5 grid in half points (mostly whole points; a few 4.5)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 0.7, QUESTIONS)
    out = {}
    n = 0
    for model in MODELS:
        for q in range(QUESTIONS):
            for r in range(1, REPLICATES + 1):
                latent = 3.6 + MODEL_EFFECT[model] - difficulty[q] + rng.normal(0, 0.35)
                scores = {}
                for code in CRITERIA:
                    if code == "bias":
                        scores[code] = 5.0 if rng.random() < 0.98 else 4.0
                        continue
                    value = float(np.clip(np.round(latent + rng.normal(0, 0.5)), 0, 5))
                    scores[code] = value
                n += 1
                if n % 37 == 0 and scores["harm"] == 5.0:  # a few half points, as in the published scores
                    scores["harm"] = 4.5
                out[answer_id(model, q + 1, r)] = scores
    return out


def judge_response(scores: dict[str, float], n: int) -> str:
    """One answer as HIVMedQA's judge writes it; scores as numbers, as text and as half points, alternating."""
    body = {}
    for k, code in enumerate(CRITERIA, start=1):
        value = scores[code]
        whole = float(value).is_integer()
        if whole and (n + k) % 3 == 0:
            body[f"question {k}"] = str(int(value))  # "4"
        else:
            body[f"question {k}"] = int(value) if whole else value  # 4 or 4.5
    body["overall score"] = round(sum(scores.values()) / len(scores), 2)
    body["reason"] = "The answer matches the reference on the regimen but omits the monitoring interval."
    return "Here is my evaluation.\n```json\n" + json.dumps(body, indent=2) + "\n```"


def judge_csv(scores: dict[str, dict[str, float]] | None = None, *, with_values: bool = True) -> str:
    """The judge's scores as an ``import_labels`` file: rows with rater_kind judge, judge_model, prompt and the raw
    response; ``with_values=False`` leaves the value column empty (the score is read from the raw response)."""
    scores = scores if scores is not None else judge_scores()
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dialogue_id", "rater", "item", "value", "rater_kind", "judge_model", "prompt", "raw_response"])
    for n, (answer, values) in enumerate(sorted(scores.items())):
        response = judge_response(values, n)
        prompt = f"Act as a senior clinician specialised in HIV ... evaluate answer {answer}"
        for code in CRITERIA:
            value = values[code]
            text = (str(int(value)) if float(value).is_integer() else str(value)) if with_values else ""
            writer.writerow([answer, JUDGE, code, text, "judge", JUDGE_MODEL, prompt, response])
    return buffer.getvalue()


def physician_scores(judge: dict[str, dict[str, float]], seed: int = 12, replicates=(1,)) -> list[tuple]:
    """(answer id, physician, criterion, score): three physicians on the given replicates of every question,
    close to the judge's score (physicians agree with each other and with the judge up to a point's noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for q in range(1, QUESTIONS + 1):
            for r in replicates:
                answer = answer_id(model, q, r)
                for physician in PHYSICIANS:
                    for code in CRITERIA:
                        base = judge[answer][code]
                        if code == "bias":
                            value = base if rng.random() < 0.99 else 4.0
                        else:
                            value = float(np.clip(base + rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0]), 0, 5))
                        rows.append((answer, physician, code, value))
    return rows


def physicians_csv(rows: list[tuple]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dialogue_id", "rater", "item", "value"])
    for answer, physician, code, value in rows:
        writer.writerow([answer, physician, code, str(int(value)) if float(value).is_integer() else str(value)])
    return buffer.getvalue()


def table2(scores: dict[str, dict[str, float]]):
    """HIVMedQA's Table 2 from scores by answer id (``judge_scores``), computed independently of the app with pandas
    and scipy: per model and criterion the mean over questions (each the mean of its replicates), the SD (ddof 1)
    of the per-replicate means and their 95% t-interval. A frame indexed by (model, criterion) with columns
    ``mean``, ``sd``, ``ci_low``, ``ci_high``."""
    import pandas as pd
    from scipy import stats

    frame = pd.DataFrame([{"model": a.split("-q")[0], "case": a.split("-")[2], "replicate": int(a[-1]),
                           "criterion": c, "value": v} for a, values in scores.items() for c, v in values.items()])
    rows = []
    for (model, code), block in frame.groupby(["model", "criterion"]):
        means = block.groupby("replicate")["value"].mean()
        sd = means.std(ddof=1)
        half = stats.t.ppf(0.975, len(means) - 1) * sd / np.sqrt(len(means))
        rows.append({"model": model, "criterion": code, "mean": block.groupby("case")["value"].mean().mean(),
                     "sd": sd, "ci_low": means.mean() - half, "ci_high": means.mean() + half})
    return pd.DataFrame(rows).set_index(["model", "criterion"])
