"""The coarse privacy filter (annotation.privacy): pure functions, no database."""

from __future__ import annotations

import copy

import pytest

from annotation.privacy import (
    KINDS,
    Match,
    apply_redactions,
    has_private_info,
    redact_dialogue,
    redact_text,
    scan_dialogue,
    scan_text,
    valid_cn_id_checksum,
)


def found(text: str) -> list[tuple[str, str]]:
    """(kind, matched text) for every finding; also checks the invariants of scan_text."""
    spans = scan_text(text)
    assert spans == sorted(spans, key=lambda s: (s[1], s[2]))
    for (_, _, end), (_, start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start, f"overlapping spans in {spans}"
    for kind, start, end in spans:
        assert kind in KINDS
        assert 0 <= start < end <= len(text)
    return [(kind, text[start:end]) for kind, start, end in spans]


# names ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("My name is Testy McDemoface and I have had a cough for 3 days.", "Testy McDemoface"),
        ("Hello doctor, my name is Alice.", "Alice"),
        ("my name's John O'Brien, I'm 45.", "John O'Brien"),
        ("My name’s Mary Jane Watson", "Mary Jane Watson"),
        ("I'm called Jean-Luc Picard.", "Jean-Luc Picard"),
        ("I am called Bob", "Bob"),
        ("Please call me Liz.", "Liz"),
        ("Hi, this is Anna Smith speaking.", "Anna Smith"),
        ("This is Doctor Anna Smith speaking.", "Anna Smith"),
        ("My name is Dr. Kim", "Kim"),
        ("Thank you, Dr. Smith.", "Smith"),
        ("Mrs. Wang Li came with her son.", "Wang Li"),
        ("Ms Brown has diabetes.", "Brown"),
        ("Mr. Smith, your results are ready.", "Smith"),
        ("Hi, my name is 张三, I have a cough.", "张三"),
    ],
)
def test_english_names(text, name):
    assert found(text) == [("name", name)]


@pytest.mark.parametrize(
    "text",
    [
        "I am tired.",
        "I'm tired and dizzy, I am called in sick often.",
        "I am Tired",  # "I am X" is not a trigger
        "my name is john",  # the name must be capitalised
        "Call me if the fever comes back.",
        "Call me Monday please.",
        "call me tomorrow",
        "This is my first visit.",
        "This is serious, speaking frankly.",
        "Thanks Dr. The pain is better.",
        "My name is",
    ],
)
def test_english_non_names(text):
    assert found(text) == []


def test_english_name_stops_at_a_non_name_word():
    assert found("My name is Sam Today I feel sick") == [("name", "Sam")]
    assert found("My name is Alice And I have a headache") == [("name", "Alice")]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("医生你好，我叫张三，今年45岁。", "张三"),
        ("我叫张三今年45岁", "张三"),
        ("我叫李小明", "李小明"),
        ("我的名字是欧阳娜娜。", "欧阳娜娜"),
        ("我的名字叫王芳，女，32岁", "王芳"),
        ("我是李明。", "李明"),
        ("您好，我是陈静，最近总是头晕", "陈静"),
        ("我是赵四", "赵四"),
        ("姓名：王小明", "王小明"),
        ("姓名: 刘洋；性别：男", "刘洋"),
    ],
)
def test_chinese_names(text, name):
    assert found(text) == [("name", name)]


@pytest.mark.parametrize(
    "text",
    [
        "我是高血压。",
        "我是高血压患者，吃药三年了。",
        "我是周一来的。",
        "我是周一。",
        "我是王医生。",
        "我叫王医生。",
        "我叫了救护车。",
        "我是江苏人。",
        "我是郑州的。",
        "我是第一次来。",
        "我是2型糖尿病。",
        "我是从昨天开始发烧的",
        "我是白领，经常熬夜。",
        "我是孙女，陪奶奶来看病。",
        "我是患者家属。",
        "我是她女儿。",
        "我是张",  # a surname alone is not a name
        "我叫他过来。",
    ],
)
def test_chinese_non_names(text):
    assert found(text) == []


# phones -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("我电话是138-0000-0000", "138-0000-0000"),
        ("手机：13800000000，随时联系", "13800000000"),
        ("call 138 0000 0000 tonight", "138 0000 0000"),
        ("my number is +86 13800000000.", "+86 13800000000"),
        ("+86-138-0000-0000", "+86-138-0000-0000"),
        ("家里电话010-12345678", "010-12345678"),
        ("座机0571-8888888", "0571-8888888"),
        ("(0571) 88888888", "(0571) 88888888"),
        ("Call 555-123-4567 after six.", "555-123-4567"),
        ("Reach me at (555) 123-4567.", "(555) 123-4567"),
        ("+1 555 123 4567", "+1 555 123 4567"),
        ("1-800-555-1234", "1-800-555-1234"),
        ("My mobile is +44 7700 900123.", "+44 7700 900123"),
        ("ring 07700 900123", "07700 900123"),
        ("+44 (0) 20 7946 0958", "+44 (0) 20 7946 0958"),
        ("phone: 8765 4321", "8765 4321"),
        ("Tel 5551234", "5551234"),
        ("电话：87654321", "87654321"),
        ("联系电话是 6543 2109。", "6543 2109"),
    ],
)
def test_phones(text, phone):
    assert found(text) == [("phone", phone)]


@pytest.mark.parametrize(
    "text",
    [
        "phone: 12345",  # too few digits
        "13800000000000000",  # too long for a mobile, not an id either
        "1.38000000001",  # a decimal
        "+38.9",
        "hotel 1234567",  # "tel" inside a word
        "The cells 1234567",
    ],
)
def test_phone_non_matches(text):
    assert [k for k, _ in found(text) if k == "phone"] == []


# e-mail -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "email"),
    [
        ("Email me at test.user+tag@example.co.uk please.", "test.user+tag@example.co.uk"),
        ("我的邮箱是zhangsan123@qq.com，谢谢", "zhangsan123@qq.com"),
        ("<a.b@mail.example.org>", "a.b@mail.example.org"),
    ],
)
def test_emails(text, email):
    assert found(text) == [("email", email)]


@pytest.mark.parametrize("text", ["a @ b", "user@localhost", "@example.com", "name@", "x@y"])
def test_email_non_matches(text):
    assert found(text) == []


# ids --------------------------------------------------------------------------------------------------------


def test_chinese_resident_id_checksum():
    assert valid_cn_id_checksum("11010519491231002X")
    assert valid_cn_id_checksum("11010519491231002x")
    assert not valid_cn_id_checksum("110105194912310021")
    assert not valid_cn_id_checksum("1101051949123100")


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("身份证号11010519491231002X。", "11010519491231002X"),
        ("my ID is 110105194912310021", "110105194912310021"),  # wrong check digit, plausible birth date
        ("我的身份证号码是：440301199001011234", "440301199001011234"),
        ("身份证是110105491231002", "110105491231002"),  # old 15-digit number after an explicit trigger
        ("SSN 123-45-6789", "123-45-6789"),
        ("passport number E12345678", "E12345678"),
        ("Passport No. G1234567.", "G1234567"),
        ("my passport number is P1234567", "P1234567"),
        ("passport: 123456789", "123456789"),
        ("护照号码是E12345678", "E12345678"),
    ],
)
def test_id_numbers(text, number):
    assert found(text) == [("id_number", number)]


@pytest.mark.parametrize(
    "text",
    [
        "110105199013011234",  # month 13
        "110105199002301234",  # 30 February
        "110105290001011234",  # born in the future
        "1101051990010112345",  # 19 digits
        "000-12-3456",
        "123-00-4567",
        "my passport is in the car",
        "passport photos",
    ],
)
def test_id_non_matches(text):
    assert found(text) == []


# addresses --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("He lives at 221B Baker Street now.", "221B Baker Street"),
        ("12 Oak Avenue", "12 Oak Avenue"),
        ("1600 Pennsylvania Ave NW, Washington", "1600 Pennsylvania Ave NW"),
        ("5 Elm Dr", "5 Elm Dr"),
        ("Send it to 42 Wallaby Way.", "42 Wallaby Way"),
        ("10 Downing St.", "10 Downing St."),
        ("350 5th Avenue", "350 5th Avenue"),
        ("I live at 221B Baker Street, London.", "221B Baker Street, London"),
        ("I live on Elm Street with my wife.", "Elm Street"),
        ("We live at Rose Cottage, Church Lane", "Rose Cottage, Church Lane"),
        ("My address is 7 Station Road", "7 Station Road"),
        ("浙江省杭州市西湖区文三路100号", "浙江省杭州市西湖区文三路100号"),
        ("我家住在上海市浦东新区世纪大道88号。", "上海市浦东新区世纪大道88号"),
        ("地址：中山路12号", "中山路12号"),
        ("我住在阳光小区3栋2单元501室，离医院很近", "阳光小区3栋2单元501室"),
        ("我住在广西壮族自治区南宁市青秀区民族大道100号", "广西壮族自治区南宁市青秀区民族大道100号"),
        ("杭州市西湖区西溪街道文一西路998号", "杭州市西湖区西溪街道文一西路998号"),
        ("我是北京市朝阳区的", "北京市朝阳区"),
        ("广东省广州市", "广东省广州市"),
        ("我住在北京，最近咳嗽。", "北京"),
        ("我住在杭州已经十年了", "杭州"),
    ],
)
def test_addresses(text, address):
    assert found(text) == [("address", address)]


@pytest.mark.parametrize(
    "text",
    [
        "I live at home with my parents.",
        "I live on my own.",
        "I live on the 5th floor.",
        "We saw 2 Doctors",
        "Take 2 St John's Wort capsules",
        "我和女儿住在一起。",
        "我住在市区，工作是办公室职员。",
        "我住在医院附近",
        "我住在3楼",
        "我去了超市买东西",
        "昨天在社区医院量了血压",
        "今天是3月12号",
        "我走路走了3公里",
    ],
)
def test_address_non_matches(text):
    assert found(text) == []


# clinical numbers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "blood glucose 2.7 mmol/L",
        "BP 150/95",
        "BP 150/95 mmHg, HR 110 bpm, RR 20, SpO2 95%",
        "temperature 38.9 ℃",
        "38.9 °C since 2024-03-15",
        "seen on 03/15/2024 and 15.03.2024",
        "I take 500 mg metformin twice a day",
        "fever for 3 days",
        "diagnosed in 2019",
        "120/80",
        "HbA1c 7.5%, LDL 3.4 mmol/L, creatinine 88 umol/L, eGFR 85 mL/min/1.73m2",
        "WBC 12.3 x 10^9/L, PLT 250 x 10^9/L, Hb 135 g/L",
        "weight 70 kg, height 175 cm, BMI 22.9",
        "at 10:30-11:45 on 2024.03.15",
        "sample 20240315001 received",
        "血糖2.7mmol/L，血压150/95mmHg，体温38.9℃",
        "2024年3月15日开始发烧，持续3天，吃了500mg布洛芬",
        "我从2019年开始血压高，今年45岁",
        "Doctor: How long have you had the fever? Patient: About 3 days, 38.9 ℃, I took 500 mg paracetamol.",
    ],
)
def test_no_false_positives_on_clinical_numbers(text):
    assert found(text) == []


# merging ----------------------------------------------------------------------------------------------------


def test_offsets_refer_to_the_original_text():
    text = "Hi! My name is Testy McDemoface; phone 555-123-4567, email t@example.com, 住在北京。"
    spans = scan_text(text)
    assert [(k, text[s:e]) for k, s, e in spans] == [
        ("name", "Testy McDemoface"), ("phone", "555-123-4567"), ("email", "t@example.com"), ("address", "北京"),
    ]
    assert text.index("Testy") == spans[0][1]


def test_overlapping_findings_are_merged_preferring_the_longer():
    # The street rule finds "12 Oak Avenue", the "I live at" rule "12 Oak Avenue, Springfield": one span, the union.
    text = "I live at 12 Oak Avenue, Springfield."
    assert scan_text(text) == [("address", 10, 36)]
    # "我电话是138-0000-0000": the mobile rule and the trigger rule give the same span, reported once.
    assert found("我电话是138-0000-0000") == [("phone", "138-0000-0000")]
    # "+86 138 0000 0000": the mobile rule and the international rule overlap; one phone span.
    assert found("+86 138 0000 0000") == [("phone", "+86 138 0000 0000")]


def test_merged_kind_is_that_of_the_longest_finding():
    # "住在" picks up the whole address; the chain rule finds only the street part; the kind is address either way.
    text = "我住在幸福路8号"
    assert found(text) == [("address", "幸福路8号")]


def test_adjacent_findings_stay_separate():
    text = "13800000000 a@b.cn"
    assert [k for k, _, _ in scan_text(text)] == ["phone", "email"]


def test_scan_text_tolerates_empty_and_non_strings():
    assert scan_text("") == []
    assert scan_text(None) == []  # type: ignore[arg-type]


# dialogue ---------------------------------------------------------------------------------------------------


DIALOGUE_REPORT = "Chest pain for 3 days. My name is Testy McDemoface."
DIALOGUE_TURNS = [
    {"role": "doctor", "text": "Hello, what brings you in? BP 150/95 today."},
    {"role": "patient", "text": "我电话是138-0000-0000，胸口疼了三天。"},
    {"role": "measurement", "text": "blood glucose 2.7 mmol/L, 38.9 ℃"},
    {"role": "patient", "text": "I live at 221B Baker Street and my email is testy@example.com"},
]


def test_scan_dialogue_finds_english_name_and_chinese_phone():
    matches = scan_dialogue(DIALOGUE_REPORT, DIALOGUE_TURNS)
    assert [(m.kind, m.field, m.turn, m.text) for m in matches] == [
        ("name", "self_report", None, "Testy McDemoface"),
        ("phone", "turn", 1, "138-0000-0000"),
        ("address", "turn", 3, "221B Baker Street"),
        ("email", "turn", 3, "testy@example.com"),
    ]
    for m in matches:
        source = DIALOGUE_REPORT if m.field == "self_report" else DIALOGUE_TURNS[m.turn]["text"]
        assert source[m.start:m.end] == m.text
    assert has_private_info(DIALOGUE_REPORT, DIALOGUE_TURNS)


def test_scan_dialogue_clean_dialogue():
    turns = [{"role": "doctor", "text": "How long?"}, {"role": "patient", "text": "3 days, 38.9 ℃, BP 120/80."}]
    assert scan_dialogue("Fever since 2024-03-15.", turns) == []
    assert not has_private_info("Fever since 2024-03-15.", turns)


def test_scan_dialogue_tolerates_odd_turns():
    turns = [{"role": "doctor"}, {"role": "patient", "text": None}, "not a dict", {"text": "call 555-123-4567"}]
    matches = scan_dialogue("", turns)  # type: ignore[arg-type]
    assert [(m.kind, m.turn) for m in matches] == [("phone", 3)]


def test_match_to_dict_and_is_frozen():
    m = Match("phone", "turn", 1, 4, 17, "138-0000-0000")
    assert m.to_dict() == {"kind": "phone", "field": "turn", "turn": 1, "start": 4, "end": 17,
                           "text": "138-0000-0000"}
    with pytest.raises(AttributeError):
        m.kind = "name"  # type: ignore[misc]


# redact_text ------------------------------------------------------------------------------------------------


def test_redact_text_single_span():
    text = "My name is Testy McDemoface."
    assert redact_text(text, [(11, 27)]) == "My name is [REDACTED]."


def test_redact_text_unsorted_and_overlapping_spans_use_original_offsets():
    text = "0123456789abcdefghij"
    # (12, 15) and (2, 5) unsorted; (4, 7) overlaps (2, 5); (14, 16) overlaps (12, 15).
    assert redact_text(text, [(12, 15), (4, 7), (2, 5), (14, 16)], mask="#") == "01#789ab#ghij"


def test_redact_text_merges_touching_and_nested_spans():
    assert redact_text("abcdefgh", [(1, 3), (3, 5)], mask="*") == "a*fgh"
    assert redact_text("abcdefgh", [(1, 7), (2, 3)], mask="*") == "a*h"


def test_redact_text_clips_and_ignores_bad_spans():
    text = "secret"
    assert redact_text(text, [(-5, 2)], mask="*") == "*cret"
    assert redact_text(text, [(4, 99)], mask="*") == "secr*"
    assert redact_text(text, [(3, 3), (5, 2), (50, 60), ("a", 2), (1,)], mask="*") == "secret"  # type: ignore[list-item]
    assert redact_text(text, [], mask="*") == "secret"
    assert redact_text(text, [(0, 6)]) == "[REDACTED]"


def test_redact_text_with_scan_text_spans():
    text = "我叫张三，电话13800000000，住在阳光小区3栋2单元。"
    spans = [(s, e) for _, s, e in scan_text(text)]
    assert redact_text(text, spans) == "我叫[REDACTED]，电话[REDACTED]，住在[REDACTED]。"


# apply_redactions -------------------------------------------------------------------------------------------


def test_apply_redactions_on_turns_and_self_report_without_mutating_inputs():
    report = DIALOGUE_REPORT
    turns = copy.deepcopy(DIALOGUE_TURNS)
    before = copy.deepcopy(turns)
    redactions = [m.to_dict() for m in scan_dialogue(report, turns)]
    new_report, new_turns = apply_redactions(report, turns, redactions)

    assert new_report == "Chest pain for 3 days. My name is [REDACTED]."
    assert new_turns[1]["text"] == "我电话是[REDACTED]，胸口疼了三天。"
    assert new_turns[3]["text"] == "I live at [REDACTED] and my email is [REDACTED]"
    assert new_turns[0] == turns[0] and new_turns[2] == turns[2]
    assert [t["role"] for t in new_turns] == [t["role"] for t in turns]
    # Inputs untouched, outputs are copies.
    assert turns == before and report == DIALOGUE_REPORT
    assert new_turns is not turns and all(a is not b for a, b in zip(new_turns, turns, strict=True))


def test_apply_redactions_copies_nested_turn_data():
    turns = [{"role": "patient", "text": "call 555-123-4567", "meta": {"tags": ["a"]}}]
    _, new_turns = apply_redactions("", turns, [{"field": "turn", "turn": 0, "start": 5, "end": 17}])
    new_turns[0]["meta"]["tags"].append("b")
    assert turns[0]["meta"] == {"tags": ["a"]}
    assert new_turns[0]["text"] == "call [REDACTED]"


def test_apply_redactions_clips_and_skips_bad_entries():
    turns = [{"role": "doctor", "text": "abcdef"}, {"role": "patient", "text": "ghijkl"}]
    redactions = [
        {"field": "turn", "turn": 0, "start": 4, "end": 100},  # clipped to the end
        {"field": "turn", "turn": 1, "start": -3, "end": 2},  # clipped to the start
        {"field": "turn", "turn": 7, "start": 0, "end": 2},  # no such turn
        {"field": "turn", "turn": -1, "start": 0, "end": 2},  # negative index is not "the last turn"
        {"field": "turn", "turn": None, "start": 0, "end": 2},
        {"field": "self_report", "turn": None, "start": 50, "end": 60},  # outside the self-report
        {"field": "nonsense", "turn": 0, "start": 0, "end": 1},
        {"field": "turn", "turn": 0},  # no offsets
        {"field": "turn", "turn": "0", "start": 0, "end": 1},
        "not a dict",
    ]
    report, new_turns = apply_redactions("report", turns, redactions, mask="*")  # type: ignore[arg-type]
    assert report == "report"
    assert [t["text"] for t in new_turns] == ["abcd*", "*ijkl"]
    assert [t["text"] for t in turns] == ["abcdef", "ghijkl"]


def test_apply_redactions_overlapping_spans_in_one_turn_and_self_report():
    report = "Name: Testy McDemoface, phone 555-123-4567"
    redactions = [
        {"field": "self_report", "turn": None, "start": 30, "end": 42},
        {"field": "self_report", "turn": None, "start": 6, "end": 12},
        {"field": "self_report", "turn": None, "start": 11, "end": 22},
    ]
    new_report, new_turns = apply_redactions(report, [], redactions)
    assert new_report == "Name: [REDACTED], phone [REDACTED]"
    assert new_turns == []


def test_apply_redactions_accepts_match_objects_and_no_redactions():
    turns = [{"role": "patient", "text": "我叫李明。"}]
    report, new_turns = apply_redactions("", turns, scan_dialogue("", turns))
    assert new_turns[0]["text"] == "我叫[REDACTED]。"
    report, same = apply_redactions("text", turns, [])
    assert report == "text" and same == turns and same is not turns


def test_redact_dialogue_end_to_end():
    report, turns = redact_dialogue(DIALOGUE_REPORT, DIALOGUE_TURNS, mask="█")
    assert report == "Chest pain for 3 days. My name is █."
    assert turns[1]["text"] == "我电话是█，胸口疼了三天。"
    assert turns[2]["text"] == DIALOGUE_TURNS[2]["text"]
    assert not has_private_info(report, turns)


# linearity --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a" * 20000,
        "a" * 5000 + "@" + "a" * 5000,
        "1" * 20000,
        "1-" * 10000,
        "+1 " * 7000,
        "My name is " + "Aaaa " * 4000,
        "I live at " + "Oak, " * 4000,
        "12 " + "Oak " * 4000,
        "市" * 5000,
        "住在" * 5000,
        "我是王" * 3000,
    ],
)
def test_pathological_inputs_complete(text):
    # No timing assertion: this would hang (catastrophic backtracking) rather than fail if a pattern were not linear.
    scan_text(text)
