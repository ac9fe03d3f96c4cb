"""Coarse, pattern-based privacy filter for doctor-patient dialogues in English and Chinese.

The MedEval study removed dialogues with patient privacy using regular expressions such as "My name is ..."
(Shi et al., LLM-Mini-CEX, sec. 4.4). This module finds names, phone numbers, e-mail addresses, identity numbers and
postal addresses in the self-report and the turns of a dialogue, and applies redactions (character spans of the
ORIGINAL text) without touching the stored originals. Pure Python, no Django.

Design notes:

* Patterns are precompiled and written to be linear: every repeated group consumes a disjoint kind of
  character, bounded repetition is used where runs could be split several ways, and each pattern starts with a
  look-behind so that a failed attempt inside a long word or number dies at once.
* Clinical numbers (``2.7 mmol/L``, ``BP 150/95``, ``38.9 ℃``, ``500 mg``, ``3 days``, ``2019``, dates) are
  avoided by requiring separators/shape (phones), a plausible birth date (Chinese resident ID), a street
  suffix after a house number (English addresses) or an explicit trigger phrase.
* Only the sensitive part is reported: "My name is Testy McDemoface" gives the span of "Testy McDemoface".
* Overlapping findings are merged into one span covering all of them; its kind is that of the longest finding.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "KINDS",
    "Match",
    "apply_redactions",
    "has_private_info",
    "redact_dialogue",
    "redact_text",
    "scan_dialogue",
    "scan_text",
    "valid_cn_id_checksum",
]

KINDS = ("name", "phone", "email", "id_number", "address")
# Tie-break when two overlapping findings have the same length: the more specific kind wins.
_PRIORITY = {"id_number": 0, "email": 1, "phone": 2, "address": 3, "name": 4}
DEFAULT_MASK = "[REDACTED]"


@dataclass(frozen=True)
class Match:
    kind: str  # "name", "phone", "email", "id_number", "address"
    field: str  # "self_report" or "turn"
    turn: int | None  # 0-based turn index when field == "turn"
    start: int  # character offsets in that text
    end: int
    text: str  # the matched (sensitive) span

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------------------------

HAN = "\u3400-\u4dbf\u4e00-\u9fff"


def _words(s: str) -> tuple[str, ...]:
    return tuple(s.split())


_HAN_RE = re.compile(f"[{HAN}]")
_DIGIT_RE = re.compile(r"\d")

# The ~100 most common Chinese surnames (by population), then common two-character surnames.
CN_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林高罗郑梁谢宋唐许韩邓冯曹彭曾肖田董潘袁蔡蒋余于杜叶程魏苏吕丁任卢姚沈"
    "钟姜崔谭陆范汪廖石金韦贾夏付傅方邹熊白孟秦邱侯江尹薛闫段雷龙黎史陶贺毛郝顾龚邵万覃武钱戴严莫孔向常汤"
)
CN_COMPOUND_SURNAMES = ("欧阳", "司马", "诸葛", "上官", "东方", "皇甫", "令狐", "慕容", "尉迟", "公孙", "夏侯",
                        "长孙", "宇文", "司徒", "西门", "南宫")
_CN_SURNAME = "(?:" + "|".join(CN_COMPOUND_SURNAMES) + f"|[{CN_SURNAMES}])"

# Words that start with a surname character but are not names ("我是高血压。", "我是周一来的").
_CN_NOT_NAME_PREFIXES = (
    "高血", "高烧", "高热", "高中", "高兴", "高龄", "高危", "高一", "高二", "高三", "高原", "高管", "高层", "高考",
    "周一", "周二", "周三", "周四", "周五", "周六", "周日", "周天", "周末", "周岁",
    "白天", "白领", "白血", "白班", "马上", "万一", "于是", "方便", "方面", "方向", "金融", "金属", "江苏", "江西",
    "黄疸", "黄色", "任何", "何时", "何况", "许多", "许久", "常常", "常规", "孙子", "孙女", "钱包", "石头", "毛病",
    "严重", "严格", "武汉", "史上", "向来", "程序", "陆续", "曾经", "夏天", "沈阳", "郑州", "常州", "唐氏", "韩国",
    "龙虾", "雷雨", "范围", "钟点", "叶酸", "苏醒", "余下", "杜绝", "林区", "潘生", "董事", "田径", "蔡司", "谢谢",
    "丁香", "卢布", "戴着", "段时", "孔子", "毛巾", "秦皇", "宋体", "陶瓷", "贾宝",
)
_CN_TITLES = ("医生", "大夫", "护士", "老师", "先生", "女士", "小姐", "阿姨", "叔叔", "师傅", "主任", "院长", "教授",
              "同学", "老板", "经理", "总")
# A name does not end with a particle, a measure word or a place suffix.
_CN_NOT_NAME_LAST = set("人的了吗呢吧啊呀么们个州市省区县镇村路街号")

# Capitalised words after a trigger that are not names ("Call me Monday", "Thanks Dr. The ...").
_EN_NOT_NAMES = frozenset(_words("""
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August
    September October November December Today Tomorrow Tonight Yesterday Later Back Again Anytime Please Doctor
    Doc Sir Madam Ma'am Nurse English Chinese Mandarin The A An I It Its My Your Our Their His Her And But Or So
    Yes No Not Ok Okay Thank Thanks Hello Hi Hey What How When Why Where Who Which This That These Those We You He
    She They There Here Is Are Was Were Am If Then Also Just Now Well Sorry Good Fine Great Bye Goodbye Mr Mrs Ms Mx
    Miss Dr Prof Professor
"""))
_EN_TITLE = r"(?:Mr|Mrs|Ms|Mx|Miss|Dr|Doctor|Prof|Professor)\.?"
# A capitalised name word: "Li", "McDemoface", "O'Brien", "Jean-Luc". Each repetition starts with a capital,
# so there is only one way to split a word (no catastrophic backtracking).
_EN_NAME_WORD = r"[A-Z](?:[a-z]+|['’](?=[A-Z]))(?:['’-]?[A-Z][a-z]+)*"
_EN_NAMES = rf"{_EN_NAME_WORD}(?:[ \t]+{_EN_NAME_WORD}){{0,2}}\b"

# Characters allowed in a Chinese place name: letters (Han included) but not digits, Latin letters or the
# particles/pronouns/verbs that typically precede an address ("我家住在杭州市" starts at 杭).
_PL = r"[^\W\d_A-Za-z我你他她它在住是的了与从到去就也都还这那个已很有没不吗呢吧啊呀么]"
# The same, with digits, for the free text after "住在".
_ADDRCH = r"[^\W_A-Za-z我你他她它在住是的了与从到去就也都还这那个已很有没不吗呢吧啊呀么]"
_CN_NUM = r"[0-9０-９一二三四五六七八九十百零〇]+"
_PHONE_SEP = r"[ \t.()\-]"
# Chinese address components. Administrative names exclude the administrative suffixes themselves, which keeps
# the bounded, lazy repetitions cheap even on runs such as "市市市市".
_PLA = _PL[:-1] + "省市区县]"
_CN_PROV = rf"{_PLA}{{2,7}}?(?:省|自治区)"
_CN_CITY = rf"{_PLA}{{2,7}}?市"
_CN_DIST = rf"{_PLA}{{1,7}}?(?:区|县|旗)"
_CN_TOWN = rf"{_PLA}{{1,7}}?(?:街道|镇|乡)"
_CN_ADMIN = rf"(?:{_CN_PROV})?(?:{_CN_CITY})?(?:{_CN_DIST})?(?:{_CN_TOWN})?"
_CN_PLACE = (rf"(?:{_PL}{{1,8}}?(?:大街|大道|路|街|巷|弄|胡同)[ \t]*{_CN_NUM}[ \t]*[号弄]"
             rf"|{_PL}{{1,10}}?(?:小区|花园|公寓|新村|家园|大厦|苑|村)[ \t]*{_CN_NUM}[ \t]*(?:栋|幢|号楼|座|号))")
_CN_BUILDING = (rf"(?:[ \t]*{_CN_NUM}[ \t]*(?:栋|幢|号楼|座))?(?:[ \t]*{_CN_NUM}[ \t]*单元)?"
                rf"(?:[ \t]*{_CN_NUM}[ \t]*[室号])?")
# Without a street or building: at least two administrative levels ("北京市朝阳区", "广东省广州市").
_CN_ADMIN2 = rf"(?:{_CN_PROV}(?:{_CN_CITY})?{_PLA}{{1,7}}?(?:市|区|县)|{_CN_CITY}{_CN_DIST})"
# Characters that end a component of a Chinese address; the address rule only runs when one is present.
_CN_ADDR_KEYS = "省区市县旗镇乡道路街巷弄同号栋幢座楼村园区寓厦苑"
_CN_ADDR_KEY_RE = re.compile(f"[{_CN_ADDR_KEYS}]")


def _digits(s: str) -> int:
    return sum(ch.isdigit() for ch in s)


# --------------------------------------------------------------------------------------------------------------
# Validators: (text, regex match) -> (start, end) of the sensitive part, or None to reject the candidate.
# --------------------------------------------------------------------------------------------------------------

Span = tuple[int, int]
Validator = Callable[[str, "re.Match[str]"], Span | None]


def _group_span(m: re.Match[str]) -> Span:
    return m.span("v") if "v" in m.re.groupindex else m.span()


def _plain(_text: str, m: re.Match[str]) -> Span | None:
    return _group_span(m)


def _english_name(_text: str, m: re.Match[str]) -> Span | None:
    """Keep the leading capitalised words up to the first word that is not a name."""
    start = m.start("v")
    end = None
    for word in re.finditer(r"\S+", m.group("v")):
        if word.group() in _EN_NOT_NAMES:
            break
        end = start + word.end()
    return (start, end) if end is not None else None


def _chinese_name(_text: str, m: re.Match[str]) -> Span | None:
    name = m.group("v")
    if name.startswith(_CN_NOT_NAME_PREFIXES) or name[-1] in _CN_NOT_NAME_LAST:
        return None
    given = name[2:] if name[:2] in CN_COMPOUND_SURNAMES else name[1:]
    if not given or given.startswith(_CN_TITLES):
        return None
    return m.span("v")


def _phone(text: str, m: re.Match[str]) -> Span | None:
    start, end = _group_span(m)
    return (start, end) if 7 <= _digits(text[start:end]) <= 15 else None


def valid_cn_id_checksum(number: str) -> bool:
    """ISO 7064 MOD 11-2 check digit of an 18-character Chinese resident identity number."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(d) * w for d, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def _cn_id(_text: str, m: re.Match[str]) -> Span | None:
    """Match even when the check digit is wrong, but only with a plausible birth date."""
    number = m.group("v")
    try:
        born = datetime.date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return None
    if not datetime.date(1900, 1, 1) <= born <= datetime.date.today():
        return None
    return m.span("v")


def _trim_trailing(_text: str, m: re.Match[str]) -> Span | None:
    start, end = m.span("v")
    value = m.group("v").rstrip(" \t,.'’-")
    return (start, start + len(value)) if value else None


_CN_NOT_ADDRESS_PREFIXES = _words("""
    一起 医院 病房 家里 家中 附近 隔壁 楼上 楼下 老家 农村 城里 乡下 外地 本地 当地 哪 宿舍 单位 里面 外面 重症 监护
    酒店 宾馆 市区 城区 郊区 山区 县城 市里 县里 城市 城郊 镇上 村里 小区 乡村 市中心 南方 北方 国外 海边 山上 学校
    公司 亲戚 朋友 女儿 儿子 父母 养老院 敬老院
""")


_CN_FLOOR_OR_BED = re.compile(_CN_NUM + r"[ \t]*(?:楼|层|号|床|室)")


def _cn_lives_in(_text: str, m: re.Match[str]) -> Span | None:
    value = m.group("v")
    if value.startswith(_CN_NOT_ADDRESS_PREFIXES) or _CN_FLOOR_OR_BED.match(value):
        return None
    return m.span("v")


# --------------------------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    validate: Validator = _plain
    needs: str = ""  # cheap pre-check: "digit", "han", "cnaddr", "@", "" (always run)


def _rule(kind: str, pattern: str, validate: Validator = _plain, needs: str = "") -> _Rule:
    return _Rule(kind, re.compile(pattern), validate, needs)


_NOT_NUM_BEFORE = r"(?<![0-9A-Za-z.+\-])"  # not inside a longer number, decimal or word
_NOT_NUM_AFTER = r"(?![0-9]|\.[0-9]|[A-Za-z])"

_RULES: tuple[_Rule, ...] = (
    # ---- names --------------------------------------------------------------------------------------------
    _rule("name", r"(?<![A-Za-z])(?i:my[ \t]+name[ \t]+is|my[ \t]+name['’]s|i['’]m[ \t]+called|i[ \t]+am[ \t]+called"
                  r"|call[ \t]+me)[ \t]+(?:" + _EN_TITLE + r"[ \t]+)?(?P<v>" + _EN_NAMES
          + f"|[{HAN}]{{2,4}}(?![{HAN}]))", _english_name),
    _rule("name", r"(?<![A-Za-z])(?i:this[ \t]+is)[ \t]+(?:" + _EN_TITLE + r"[ \t]+)?(?P<v>" + _EN_NAMES
          + r")[ \t]+(?i:speaking)\b", _english_name),
    _rule("name", r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Mx|Miss|Dr|Prof)\.?[ \t]+(?P<v>" + _EN_NAME_WORD + r"(?:[ \t]+"
          + _EN_NAME_WORD + r")?\b)", _english_name),
    _rule("name", r"(?:我叫|我的名字叫|我的名字是|我名字叫|我名字是|我的姓名是|我姓名是|(?:姓名|名字)[ \t]*[:：][ \t]*)"
          r"(?P<v>" + _CN_SURNAME + f"[{HAN}]{{1,2}})(?=[^{HAN}]|$|今年|来自|住|是|在)", _chinese_name, "han"),
    _rule("name", r"我是(?P<v>" + _CN_SURNAME + f"[{HAN}]{{1,2}})(?=[^{HAN}]|$)", _chinese_name, "han"),
    # ---- e-mail ---------------------------------------------------------------------------------------------
    _rule("email", r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9](?:[A-Za-z0-9._%+\-]{0,63})@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62})"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}))*\.[A-Za-z]{2,24}\b", needs="@"),
    # ---- identity numbers -----------------------------------------------------------------------------------
    _rule("id_number", r"(?<![0-9A-Za-z])(?P<v>[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
                       r"\d{3}[\dXx])(?![0-9A-Za-z])", _cn_id, "digit"),
    _rule("id_number", r"身份证(?:号码|号)?[ \t]*(?:是|为|:|：)?[ \t]*(?P<v>\d{15}(?:\d{2}[\dXx])?)"
                       r"(?![0-9A-Za-z])", needs="digit"),
    _rule("id_number", r"(?<![0-9A-Za-z\-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![0-9\-])",
          needs="digit"),
    _rule("id_number", r"(?<![A-Za-z])(?i:passport)(?:[ \t]+(?i:number|num|no\.?|#))?(?:[ \t]+(?i:is)\b|[ \t]*[:：#])?"
                       r"[ \t]*(?P<v>(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{5,12})(?![A-Za-z0-9])", needs="digit"),
    _rule("id_number", r"护照(?:号码|号)?[ \t]*(?:是|为|:|：)?[ \t]*(?P<v>(?=[A-Za-z]{0,3}\d)[A-Za-z0-9]{5,12})"
                       r"(?![A-Za-z0-9])", needs="digit"),
    # ---- phone numbers --------------------------------------------------------------------------------------
    # Chinese mobile: 138-0000-0000, 138 0000 0000, 13800000000, +86 13800000000.
    _rule("phone", _NOT_NUM_BEFORE + r"(?:(?:\+|00)86[ \t\-]?)?1[3-9]\d(?:[ \t\-]?\d{4}){2}" + _NOT_NUM_AFTER,
          _phone, "digit"),
    # Chinese landline: 010-12345678, 0571-8888888, (0571) 88888888.
    _rule("phone", _NOT_NUM_BEFORE + r"(?:0(?:10|2\d|[3-9]\d{2})[ \t\-]?|\(0(?:10|2\d|[3-9]\d{2})\)[ \t]?)"
                                     r"[1-9]\d{6,7}" + _NOT_NUM_AFTER, _phone, "digit"),
    # North American: 555-123-4567, (555) 123-4567, +1 555 123 4567, 1-800-555-1234.
    _rule("phone", _NOT_NUM_BEFORE + r"(?:\+?1[ \t.\-]?)?(?:\(\d{3}\)[ \t.\-]?|\d{3}[ \t.\-])\d{3}[ \t.\-]\d{4}"
          + _NOT_NUM_AFTER, _phone, "digit"),
    # International with a leading plus: +44 7700 900123, +44 (0) 20 7946 0958, +86 138 0000 0000.
    _rule("phone", r"(?<![0-9A-Za-z+])\+\d(?:[ \t.()\-]{0,2}\d){6,14}" + _NOT_NUM_AFTER, _phone, "digit"),
    # UK national mobile: 07700 900123.
    _rule("phone", _NOT_NUM_BEFORE + r"07\d{3}[ \t]?\d{6}" + _NOT_NUM_AFTER, _phone, "digit"),
    # A number right after a phone trigger: "phone: 8765 4321", "电话是87654321".
    _rule("phone", r"(?<![A-Za-z])(?i:(?:tele)?phone|tel|mobile|cell|contact[ \t]+number|my[ \t]+number)"
                   r"(?:[ \t]+(?i:number|no\.?|#))?(?:[ \t]+(?i:is)\b|[ \t]*[:：#])?[ \t]*"
                   r"(?P<v>\+?\(?\d(?:" + _PHONE_SEP + r"{0,2}\d){6,14})" + _NOT_NUM_AFTER, _phone, "digit"),
    _rule("phone", r"(?:电话|手机|联系方式|联系电话|手机号)(?:号码|号)?[ \t]*(?:是|为|:|：)?[ \t]*"
                   r"(?P<v>\+?\(?\d(?:" + _PHONE_SEP + r"{0,2}\d){6,14})" + _NOT_NUM_AFTER, _phone, "digit"),
    # ---- addresses ------------------------------------------------------------------------------------------
    # English street address: a house number, 1-3 capitalised words, a street suffix, optional direction.
    _rule("address", r"(?<![0-9A-Za-z.,/\-])\d{1,5}[A-Za-z]?(?:-\d{1,5})?,?[ \t]+"
                     r"(?:(?:[A-Z][A-Za-z'’\-]*|\d{1,3}(?:st|nd|rd|th))[ \t]+){1,3}?"
                     r"(?:Street|Road|Avenue|Lane|Drive|Boulevard|Court|Way|Close|Place|Terrace|Crescent|Highway"
                     r"|Square|(?:St|Rd|Ave|Ln|Dr|Blvd|Ct|Pl|Hwy|Sq)\.?)(?![A-Za-z])"
                     r"(?:[ \t]+(?:NW|NE|SW|SE)\b)?", needs="digit"),
    # "I live at/on ...": the capitalised words (two letters or more, so not "I") and numbers that follow.
    _rule("address", r"(?<![A-Za-z])(?i:(?:i|we)[ \t]+live[ \t]+(?:at|on)|i['’]m[ \t]+living[ \t]+(?:at|on)"
                     r"|(?:i|we)[ \t]+(?:reside|stay)[ \t]+at|my[ \t]+(?:home[ \t]+)?address[ \t]+is|address[ \t]*:)"
                     r"[ \t]+(?P<v>(?:\d{1,5}[A-Za-z]?|[A-Z][A-Za-z'’\-]+)(?:,?[ \t]+(?:\d{1,5}[A-Za-z]?"
                     r"|[A-Z][A-Za-z'’\-]+)){0,11})", _trim_trailing),
    # Chinese: 省/市/区 chain ending in a street number or estate building, or at least two admin levels.
    _rule("address", rf"(?={_PL}{{0,14}}?[{_CN_ADDR_KEYS}])(?:{_CN_ADMIN}{_CN_PLACE}{_CN_BUILDING}|{_CN_ADMIN2})",
          needs="cnaddr"),
    _rule("address", rf"(?:住在|家住在?|住址(?:是|为|:|：)|地址(?:是|为|:|：))[ \t]*(?P<v>{_ADDRCH}{{2,40}})",
          _cn_lives_in, "han"),
)


# --------------------------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------------------------


def _merge_findings(found: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Merge overlapping findings into one span covering them all; the kind is that of the longest one."""
    found.sort(key=lambda f: (f[1], -(f[2] - f[1]), _PRIORITY[f[0]]))
    merged: list[tuple[str, int, int]] = []
    best: tuple[str, int, int] | None = None  # longest member of the current cluster
    for kind, start, end in found:
        if merged and start < merged[-1][2]:
            _, m_start, m_end = merged[-1]
            assert best is not None
            if (end - start, -_PRIORITY[kind]) > (best[2] - best[1], -_PRIORITY[best[0]]):
                best = (kind, start, end)
            merged[-1] = (best[0], m_start, max(m_end, end))
        else:
            best = (kind, start, end)
            merged.append(best)
    return merged


def scan_text(text: str) -> list[tuple[str, int, int]]:
    """Find the sensitive spans of one text: ``(kind, start, end)``, sorted, never overlapping."""
    if not isinstance(text, str) or not text:
        return []
    han = bool(_HAN_RE.search(text))
    present = {"": True, "digit": bool(_DIGIT_RE.search(text)), "han": han, "@": "@" in text,
               "cnaddr": han and bool(_CN_ADDR_KEY_RE.search(text))}
    found: list[tuple[str, int, int]] = []
    for rule in _RULES:
        if not present[rule.needs]:
            continue
        for m in rule.regex.finditer(text):
            span = rule.validate(text, m)
            if span is not None and span[0] < span[1]:
                found.append((rule.kind, span[0], span[1]))
    return _merge_findings(found)


def scan_dialogue(self_report: str, turns: list[dict]) -> list[Match]:
    """Scan the self-report and every turn; matches come in dialogue order (self-report first)."""
    matches = [Match(kind, "self_report", None, start, end, self_report[start:end])
               for kind, start, end in scan_text(self_report)]
    for index, turn in enumerate(turns or ()):
        text = turn.get("text") if isinstance(turn, dict) else None
        matches.extend(Match(kind, "turn", index, start, end, text[start:end]) for kind, start, end in scan_text(text))
    return matches


def has_private_info(self_report: str, turns: list[dict]) -> bool:
    """True when the coarse filter finds anything (the dialogue should be flagged or removed)."""
    return bool(scan_dialogue(self_report, turns))


# --------------------------------------------------------------------------------------------------------------
# Redaction
# --------------------------------------------------------------------------------------------------------------


def _normalise_spans(spans: Iterable[Any], length: int) -> list[Span]:
    """Clip to the text, drop empty/invalid spans, sort and merge overlapping or touching spans."""
    clean: list[Span] = []
    for span in spans or ():
        try:
            start, end = span
        except (TypeError, ValueError):
            continue
        if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
            continue
        start, end = max(0, start), min(length, end)
        if start < end:
            clean.append((start, end))
    clean.sort()
    merged: list[Span] = []
    for start, end in clean:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def redact_text(text: str, spans: list[tuple[int, int]], mask: str = DEFAULT_MASK) -> str:
    """Replace each span (offsets of the ORIGINAL text) with ``mask``. Overlapping, touching or unsorted spans
    are merged first, so each hidden stretch becomes one mask; out-of-range spans are clipped."""
    if not isinstance(text, str):
        return text
    parts: list[str] = []
    pos = 0
    for start, end in _normalise_spans(spans, len(text)):
        parts.append(text[pos:start])
        parts.append(mask)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _as_redaction(item: Any) -> dict | None:
    if isinstance(item, Match):
        return item.to_dict()
    return item if isinstance(item, dict) else None


def apply_redactions(self_report: str, turns: list[dict], redactions: list[dict],
                     mask: str = DEFAULT_MASK) -> tuple[str, list[dict]]:
    """Return redacted copies of the self-report and turns; the inputs are never modified.

    ``redactions`` are ``{"field": "self_report"|"turn", "turn": int|None, "start": int, "end": int}`` (extra keys,
    e.g. those of ``Match.to_dict()``, are ignored; ``Match`` objects are accepted too). Spans outside the text are
    clipped and entries naming a missing turn or an unknown field are skipped: this never raises.
    """
    report_spans: list[Span] = []
    turn_spans: dict[int, list[Span]] = {}
    for item in redactions or ():
        red = _as_redaction(item)
        if red is None:
            continue
        span = (red.get("start"), red.get("end"))
        if red.get("field") == "self_report":
            report_spans.append(span)
        elif red.get("field") == "turn":
            index = red.get("turn")
            if isinstance(index, int) and not isinstance(index, bool):
                turn_spans.setdefault(index, []).append(span)
    new_report = redact_text(self_report, report_spans, mask) if report_spans else self_report
    new_turns = copy.deepcopy(list(turns or ()))
    for index, spans in turn_spans.items():
        if 0 <= index < len(new_turns) and isinstance(new_turns[index], dict):
            text = new_turns[index].get("text")
            if isinstance(text, str):
                new_turns[index]["text"] = redact_text(text, spans, mask)
    return new_report, new_turns


def redact_dialogue(self_report: str, turns: list[dict], mask: str = DEFAULT_MASK) -> tuple[str, list[dict]]:
    """Redact everything the coarse filter finds (copies; the inputs are untouched)."""
    return apply_redactions(self_report, turns, scan_dialogue(self_report, turns), mask)
