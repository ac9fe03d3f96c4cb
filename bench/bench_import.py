"""Benchmark: import 10,000 dialogues (10 turns each, English and Chinese) from JSON Lines.

Target: 10,000 dialogues import in under 30 s on PostgreSQL on the 2-core machine. The dialogues go
through the same function as ``manage.py import_dialogues`` (annotation.importers.import_dialogue_file: size
check, parse and validate every line, privacy scan, one query for existing ids, bulk insert), into a fresh
corpus "bench-import-<timestamp>". A second pass re-imports the file with --update (bulk update + re-scan).
Afterwards the bench corpus, its dialogues and its audit events are deleted: the run leaves no trace.

Run against whatever DATABASE_URL is set, e.g.:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/minicex_bench SECRET_KEY=x .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/minicex_bench SECRET_KEY=x .venv/bin/python bench/bench_import.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.contenttypes.models import ContentType  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from annotation.importers import import_dialogue_file  # noqa: E402
from annotation.models import Corpus, Dialogue  # noqa: E402
from projects.models import AuditEvent  # noqa: E402

TARGET_SECONDS = 30.0

EN_COMPLAINTS = ["a cough for three days", "chest tightness when climbing stairs", "a headache since last week",
                 "stomach pain after meals", "a fever of 38.5 degrees", "dizziness in the morning",
                 "swollen ankles", "blood sugar of 2.7 mmol/L this morning"]
ZH_COMPLAINTS = ["咳嗽三天了", "爬楼梯时胸闷", "上周开始头痛", "饭后胃痛", "发烧38.5度", "早上头晕", "脚踝肿了",
                 "今天早上血糖2.7"]
EN_DOCTOR = ["When did it start, and is it getting worse?", "Have you had any surgery or known allergies?",
             "Where exactly do you feel uncomfortable?", "Do you take any medication at the moment?",
             "I suggest a blood test and a chest X-ray to find the cause.",
             "This is most likely a viral infection; rest and drink plenty of water."]
EN_PATIENT = ["It started about three days ago and it is a bit worse at night.",
              "No surgery, but I am allergic to penicillin.",
              "Mostly in the middle of my chest, sometimes on the left side.",
              "I take metformin twice a day for my diabetes.",
              "Okay, thank you doctor. Should I come back if it gets worse?"]
ZH_DOCTOR = ["什么时候开始的？有没有加重？", "以前做过手术吗？有没有药物过敏？", "具体哪里不舒服？",
             "现在在吃什么药吗？",
             "建议先查个血常规和胸片，明确原因。", "考虑病毒感染可能性大，注意休息，多喝水。"]
ZH_PATIENT = ["大概三天前开始的，晚上会重一些。", "没做过手术，对青霉素过敏。", "主要在胸口中间，有时候在左边。",
              "每天吃两次二甲双胍控制血糖。", "好的，谢谢医生。如果加重了要再来吗？"]
PRIVATE = {"en": "My name is John Smith and my phone is 555-123-4567.", "zh": "我叫王小明，电话13800138000。"}


def synthetic_dialogue(n: int, rng: random.Random) -> dict:
    lang = "zh" if n % 3 == 0 else "en"
    complaints, doctor, patient = ((ZH_COMPLAINTS, ZH_DOCTOR, ZH_PATIENT) if lang == "zh"
                                   else (EN_COMPLAINTS, EN_DOCTOR, EN_PATIENT))
    complaint = rng.choice(complaints)
    self_report = f"我{complaint}，想咨询一下。" if lang == "zh" else f"I have had {complaint} and I am worried."
    turns = []
    for t in range(10):
        if t % 2 == 0:
            turns.append({"role": "doctor", "text": rng.choice(doctor)})
        else:
            text = rng.choice(patient)
            if t == 1 and n % 100 == 0:  # 1% contain something the privacy filter should flag
                text = f"{PRIVATE[lang]} {text}"
            turns.append({"role": "patient", "text": text})
    return {"id": f"bench-{n:06d}", "self_report": self_report, "turns": turns,
            "model": rng.choice(["GPT-4", "Qwen-72B", "Baichuan2", "ChatGLM3"]), "language": lang,
            "split": rng.choice(["train", "validation", "test"]), "meta": {"bench": True, "n": n}}


def write_file(path: str, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps(synthetic_dialogue(n, rng), ensure_ascii=False) + "\n")


def cleanup(corpus: Corpus) -> None:
    """Hard-delete the benchmark corpus, its dialogues and its audit events (benchmark data, not study data)."""
    Dialogue.objects.filter(corpus=corpus).delete()
    AuditEvent.objects.filter(target_type=ContentType.objects.get_for_model(Corpus), target_id=str(corpus.pk)).delete()
    Corpus.objects.filter(pk=corpus.pk).delete()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-update", action="store_true", help="skip the second pass with --update")
    args = parser.parse_args()
    from bench.machine import enter_project

    enter_project("Bench import")  # the corpora are the benchmark project's
    vendor = connection.vendor
    print(f"database: {vendor} ({connection.settings_dict['NAME']}), {os.cpu_count()} CPUs")
    fd, path = tempfile.mkstemp(prefix="bench-import-", suffix=".jsonl")
    os.close(fd)
    corpus = None
    try:
        started = time.perf_counter()
        write_file(path, args.count, args.seed)
        size = os.path.getsize(path)
        print(f"generated {args.count:,} dialogues x 10 turns (EN/ZH) -> {size / 1e6:.1f} MB "
              f"in {time.perf_counter() - started:.1f} s")

        corpus = Corpus.objects.create(name=f"bench-import-{timezone.now():%Y%m%d-%H%M%S-%f}",
                                       description="Benchmark data; deleted at the end of the run.")
        started = time.perf_counter()
        counts = import_dialogue_file(corpus, path)
        elapsed = time.perf_counter() - started
        assert counts["created"] == args.count, counts
        assert Dialogue.objects.filter(corpus=corpus).count() == args.count
        verdict = "OK" if elapsed < TARGET_SECONDS * args.count / 10_000 else "TOO SLOW"
        print(f"import:          {elapsed:6.2f} s  {args.count / elapsed:8,.0f} dialogues/s  "
              f"(created {counts['created']:,}, flagged {counts['flagged']:,})  target < {TARGET_SECONDS:.0f} s: "
              f"{verdict}")

        if not args.no_update:
            started = time.perf_counter()
            counts = import_dialogue_file(corpus, path, update=True)
            elapsed_update = time.perf_counter() - started
            assert counts["updated"] == args.count, counts
            print(f"import --update: {elapsed_update:6.2f} s  {args.count / elapsed_update:8,.0f} dialogues/s  "
                  f"(updated {counts['updated']:,}, flagged {counts['flagged']:,})")
        return 0 if verdict == "OK" else 1
    finally:
        if corpus is not None:
            cleanup(corpus)
            left = Corpus.objects.filter(pk=corpus.pk).exists() or Dialogue.objects.filter(corpus_id=corpus.pk).exists()
            print("cleanup: bench corpus deleted" + (" (ROWS LEFT!)" if left else ""))
        os.unlink(path)


if __name__ == "__main__":
    sys.exit(main())
