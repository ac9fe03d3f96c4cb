"""A scripted clinic for the fake OpenAI server: answers as doctor, patient, measurement reader or moderator,
recognised by the system prompt of the request (the default generation prompts)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field


@dataclass
class Clinic:
    """``diagnose_at``: the doctor turn that gives the diagnosis (None: never); ``diagnoses``: what each doctor
    model diagnoses (default: ``default_diagnosis``); ``test_at``: doctor turns that request a test; ``secrets``:
    strings the patient blurts out if they appear in its prompt (the leak detector); ``patient_line``: what the
    patient says."""

    diagnose_at: int | None = 3
    diagnoses: dict[str, str] = field(default_factory=dict)
    default_diagnosis: str = "Pulmonary embolism"
    test_at: tuple[int, ...] = ()
    secrets: tuple[str, ...] = ()
    patient_line: str = "It started three days ago and gets worse when I walk."
    seen: dict[str, list[dict]] = field(default_factory=lambda: {"doctor": [], "patient": [], "measurement": [],
                                                                 "moderator": []})
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def role(body: dict) -> str:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        if system.startswith("You are a doctor"):
            return "doctor"
        if system.startswith("You are a patient"):
            return "patient"
        if system.startswith("You are a measurement reader"):
            return "measurement"
        if "correct diagnosis and the doctor's diagnosis" in system:
            return "moderator"
        return "unknown"

    def __call__(self, body: dict) -> str:
        role = self.role(body)
        with self.lock:
            self.seen.setdefault(role, []).append(body)
        messages = body["messages"]
        system = messages[0]["content"]
        last = messages[-1]["content"]
        if role == "doctor":
            n = sum(m["role"] == "assistant" for m in messages) + 1
            if self.diagnose_at is not None and n >= self.diagnose_at:
                dx = self.diagnoses.get(body["model"], self.default_diagnosis)
                return f"DIAGNOSIS READY: {dx}. Please rest and come back if it gets worse."
            if n in self.test_at:
                return "REQUEST TEST: Chest_X-Ray"
            return f"Question {n} from {body['model']} at T={body.get('temperature')}: how long has this lasted?"
        if role == "patient":
            for secret in self.secrets:
                if secret.lower() in system.lower() or any(secret.lower() in str(m["content"]).lower()
                                                           for m in messages[1:]):
                    return f"My doctor friend said it is {secret}."
            return self.patient_line
        if role == "measurement":
            wanted = last.split(":")[-1].strip().replace("_", " ").lower()
            lines = system.splitlines()
            for n, line in enumerate(lines):
                if line.strip().lower().startswith(wanted):
                    depth = len(line) - len(line.lstrip())
                    block = [line.strip()]
                    for sub in lines[n + 1:]:
                        if len(sub) - len(sub.lstrip()) <= depth:
                            break
                        block.append(sub.strip())
                    return "RESULTS: " + " ".join(block)
            return "RESULTS: NORMAL READINGS"
        if role == "moderator":
            match = re.search(r"correct diagnosis: (.*)\n", last)
            correct = match.group(1).strip().lower() if match else "?"
            return "Yes" if correct in last.split("dialogue:", 1)[-1].lower() else "No"
        return "I do not know who I am."
