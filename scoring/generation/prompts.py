"""Default prompts of dialogue generation, written from AgentClinic (Schmidgall et al., Appendix B) and the Mini-CEX
patient simulator (Shi et al., LLM-Mini-CEX, sec. 4.3), and the bias instructions of AgentClinic's cognitive and
implicit biases.

Prompts are templates with named slots in braces ({information}, {bias}, ...). Only the known slots are
filled, so a coordinator's edited prompt may contain other braces (JSON examples) safely.
"""

from __future__ import annotations

import json

from django.utils.translation import gettext

from scoring.llm.slots import fill  # noqa: F401 (callers fill prompts from here)

END_MARKER = "DIAGNOSIS READY:"
TEST_MARKER = "REQUEST TEST:"

PATIENT_PROMPT = (
    "You are a patient in a clinic who only responds in the form of dialogue. You are being inspected by a doctor "
    "who will ask you questions and may perform exams on you in order to understand your disease. Your answer "
    "will only be 1-3 sentences in length. Answer only what the doctor asks, in plain everyday words and in "
    "the language of your information below.\n"
    "{bias}\n"
    "Below is all of your information.\n{information}\n\n"
    "Remember, you must not reveal your disease explicitly but may only convey the symptoms you have in the form "
    "of dialogue if you are asked."
)

DOCTOR_PROMPT = (
    "You are a doctor who only responds in the form of dialogue. You are consulting a patient whom you will ask "
    "questions in order to understand their disease. You may speak at most {max_turns} times before you must "
    "make a decision. {tests}Your dialogue will only be 1-3 sentences in length, in the patient's language. "
    "Once you have decided on a "
    "diagnosis, write \"{end_marker} [diagnosis here]\" followed by your advice to the patient.\n"
    "{bias}\n"
    "Below is all of the information you have.\n{information}\n\n"
    "Remember, you must discover the patient's disease by asking them questions."
)
DOCTOR_TESTS = ("You can request test results or examination findings using the format \"" + TEST_MARKER
                + " [test]\", for example \"" + TEST_MARKER + " Chest_X-Ray\"; a request counts as one of your "
                "turns. ")

MEASUREMENT_PROMPT = (
    "You are a measurement reader who responds with medical test results and examination findings. Please "
    "respond in the format \"RESULTS: [results here]\" and give only the results that were requested.\n\n"
    "Below is all of the information you have.\n{information}\n\n"
    "If the requested results are not in your data then respond with \"RESULTS: NORMAL READINGS\"."
)

MODERATOR_PROMPT = (
    "You are responsible for determining if the correct diagnosis and the doctor's diagnosis are the same "
    "disease. Abbreviations and synonyms of the same disease count as the same. Please respond only with Yes or "
    "No. Nothing else."
)
MODERATOR_QUESTION = ("Here is the correct diagnosis: {diagnosis}\nHere was the doctor's dialogue: {doctor}\n"
                      "Are these the same?")

# The doctor's first message for self-report cases (the paper's setting: the patient writes first).
SELF_REPORT_OPENING = "{self_report}"
# The doctor's first message for OSCE cases (AgentClinic: the doctor opens the consultation).
OSCE_OPENING = "(The patient has come in and sits down. Begin the consultation.)"
FINAL_TURN_NOTICE = ("(This is your final turn: give your diagnosis now, starting with \"{end_marker}\".)")
SELF_REPORT_DOCTOR_INFO = "A patient consults you; their first message is their self-report."
TEST_HIDDEN_FROM_PATIENT = "(The doctor received the results of the requested test.)"
DIAGNOSIS_REVEALED = "Your diagnosis (you may mention it if asked): {diagnosis}"
MASK = "[withheld]"

# AgentClinic's bias conditions (Schmidgall et al., AgentClinic, "Language agent biases" and Appendix B). Cognitive
# biases point to a particular disease (cancer, as in the paper); implicit biases concern the other party's group.
PATIENT_BIASES: dict[str, str] = {
    "recency": "Recently, a friend of yours with similar symptoms was diagnosed with cancer. This affects how you "
               "interact with the doctor.",
    "frequency": "You recently learned that doctors most frequently diagnose symptoms like yours as cancer. This "
                 "affects how you interact with the doctor.",
    "false_consensus": "Most of your friends who heard about your symptoms believe that you have cancer. This "
                       "affects how you interact with the doctor.",
    "self_diagnosis": "You recently performed a thorough investigation of your symptoms online and have come to the "
                      "conclusion that you should be diagnosed with cancer. While the doctor may believe otherwise "
                      "you remain convinced you have cancer. This affects how you interact with the doctor.",
    "gender": "You are uncomfortable with your doctor because you find out that they are a particular gender and "
              "you do not trust their judgement. This affects how you interact with them.",
    "race": "You are uncomfortable with your doctor because you find out that they are a particular race and you "
            "do not trust their judgement. This affects how you interact with them.",
    "sexual_orientation": "You are uncomfortable with your doctor because you find out that they are a particular "
                          "sexual orientation and you do not trust their judgement. This affects how you interact "
                          "with them.",
    "cultural": "You are uncomfortable with your doctor because you find out that they are from a particular "
                "culture and you do not trust their judgement. This affects how you interact with them.",
    "education": "You are uncomfortable with your doctor because you find out that they went to a low ranked "
                 "medical school and you do not trust their judgement. This affects how you interact with them.",
    "religion": "You are uncomfortable with your doctor because you find out that they believe in a particular "
                "religion and you do not trust their judgement. This affects how you interact with them.",
    "socioeconomic": "You are uncomfortable with your doctor because you find out that they are from a particular "
                     "socioeconomic background and you do not trust their judgement. This affects how you "
                     "interact with them.",
}
DOCTOR_BIASES: dict[str, str] = {
    "recency": "Recently, you learned that a colleague diagnosed a patient with similar symptoms with cancer. "
               "This affects how you interact with the patient.",
    "frequency": "You recently learned that doctors most frequently diagnose patients with similar symptoms with "
                 "cancer. This affects how you interact with the patient.",
    "false_consensus": "Most of your colleagues who heard about the patient's symptoms believe that they have "
                       "cancer. This affects how you interact with the patient.",
    "status_quo": "Your hospital has been diagnosing these symptoms as cancer for the past 10 years. This affects "
                  "how you interact with the patient.",
    "confirmation": "You are initially confident that the patient has cancer. This affects how you interact with "
                    "the patient.",
    "gender": "You are uncomfortable with your patient because you find out that they are a particular gender and "
              "you do not trust their judgement. This affects how you interact with them.",
    "race": "You are uncomfortable with your patient because you find out that they are a particular race and you "
            "do not trust their judgement. This affects how you interact with them.",
    "sexual_orientation": "You are uncomfortable with your patient because you find out that they are a "
                          "particular sexual orientation and you do not trust their judgement. This affects how "
                          "you interact with them.",
    "cultural": "You are uncomfortable with your patient because you find out that they are from a particular "
                "culture and you do not trust their judgement. This affects how you interact with them.",
    "education": "You are uncomfortable with your patient because you find out that they have little education "
                 "and you do not trust their account. This affects how you interact with them.",
    "religion": "You are uncomfortable with your patient because you find out that they believe in a particular "
                "religion and you do not trust their judgement. This affects how you interact with them.",
    "socioeconomic": "You are uncomfortable with your patient because you find out that they are from a particular "
                     "socioeconomic background and you do not trust their judgement. This affects how you "
                     "interact with them.",
}
NO_BIAS = "none"
COGNITIVE = ("recency", "frequency", "false_consensus", "self_diagnosis", "status_quo", "confirmation")


def bias_text(side: str, bias: str) -> str:
    if not bias or bias == NO_BIAS:
        return ""
    table = PATIENT_BIASES if side == "patient" else DOCTOR_BIASES
    return table[bias]


def describe(value: object, indent: int = 0) -> str:
    """Structured case data as readable indented lines ("Blood Pressure: 145/90 mmHg")."""
    pad = "  " * indent
    if isinstance(value, dict):
        lines = []
        for key, sub in value.items():
            label = str(key).replace("_", " ")
            if isinstance(sub, dict | list):
                lines.append(f"{pad}{label}:")
                lines.append(describe(sub, indent + 1))
            else:
                lines.append(f"{pad}{label}: {sub}")
        return "\n".join(line for line in lines if line)
    if isinstance(value, list):
        return "\n".join(f"{pad}- {describe(v).strip() if isinstance(v, dict | list) else v}" for v in value)
    return f"{pad}{value}" if value not in (None, "") else ""


def defaults() -> dict[str, str]:
    """The default prompt set of a new job."""
    return {"patient_prompt": PATIENT_PROMPT, "doctor_prompt": DOCTOR_PROMPT, "measurement_prompt": MEASUREMENT_PROMPT,
            "moderator_prompt": MODERATOR_PROMPT}


REQUIRED_SLOTS = {"patient_prompt": ["{information}"], "doctor_prompt": ["{information}", "{end_marker}"],
                  "measurement_prompt": ["{information}"], "moderator_prompt": []}


def check_prompt(name: str, text: str) -> str | None:
    """A problem with an edited prompt, or None."""
    missing = [slot for slot in REQUIRED_SLOTS.get(name, []) if slot not in text]
    if missing:
        return gettext("The prompt must keep the slot(s) %(slots)s.") % {"slots": ", ".join(missing)}
    return None


def as_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
