"""Django looks for the models of the ``scoring`` app here; each job's package defines its own.

One app label (``scoring``) keeps the table names and migrations as they were; the packages are:
``llm`` (call records of the LLM engine), ``judges``, ``preference`` and ``generation``.
"""

from scoring.generation.models import (  # noqa: F401
    CaseSet,
    GeneratedDialogue,
    GenerationCall,
    GenerationJob,
    GenerationTurn,
    PatientCase,
)
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet  # noqa: F401
from scoring.llm.models import LLMCall  # noqa: F401
from scoring.preference.models import (  # noqa: F401
    PreferenceAnswer,
    PreferenceAnswerChange,
    PreferenceCandidate,
    PreferenceCriterion,
    PreferenceItem,
    PreferenceJudgeRun,
    PreferencePair,
    PreferenceRater,
    PreferenceSource,
    PreferenceStudy,
    PreferenceTask,
    PreferenceVerdict,
)
