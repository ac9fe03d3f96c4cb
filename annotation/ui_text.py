"""The words of the pages that switch between English and 中文 (the scale page and the rating page).

One mechanism for both: a page's language comes from ``annotation.views.scale_language`` (``?lang=`` switches it and
it is remembered), templates write ``{% ui "key" %}`` (``annotation/templatetags/ui.py``) and the rating page's
script reads its phrases from ``{% ui_script %}``, a JSON block (the Content-Security-Policy allows no inline
script). Item texts, guidance, levels and anchors are data with their own English and Chinese fields; this table
holds only the words around them. Placeholders are ``{name}``, filled by the tag's keyword arguments (or by the
script).
"""

from __future__ import annotations

import re

_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

LANGUAGES = ("en", "zh")

PHRASES: dict[str, tuple[str, str]] = {
    # --- the scale page
    "code": ("Code", "编号"),
    "item": ("Item", "条目"),
    "guidance": ("Guidance", "说明"),
    "response": ("Response", "作答"),
    "yes_no_values": ("Yes (1) / No (0)", "是 (1) / 否 (0)"),
    "one_of_levels": ("One of {n} levels", "{n} 级之一"),
    "free_text": ("Free text (not analysed)", "自由文本（不分析）"),
    "in_steps_of": ("in steps of {step}", "步长 {step}"),
    "scale_language": ("Scale language", "量表语言"),
    # --- the rating page
    "rate_title": ("Rate dialogue", "对话评分"),
    "dialogue_position": ("Dialogue {n} of {total}", "第 {n} 个对话，共 {total} 个"),
    "answer_position": ("Answer {n} of {total}", "第 {n} 个回答，共 {total} 个"),
    "withdrawn_position": ("Withdrawn from your queue of {total}", "已从您的 {total} 个任务中撤回"),
    "done_count": ("{done} submitted", "已提交 {done} 个"),
    "skipped_count": ("{n} skipped", "已跳过 {n} 个"),
    "due": ("due {date}", "截止 {date}"),
    "quote_id": ("Quote this id when you report a problem", "报告问题时请注明此编号"),
    "dialogue_id": ("Dialogue id", "对话编号"),
    "answer_id": ("Answer id", "回答编号"),
    "answered_before": ("", "已作答 "),
    "answered_after": (" of {total} items answered", " / {total} 项"),
    "status_assigned": ("Not started", "未开始"),
    "status_in_progress": ("In progress", "进行中"),
    "status_submitted": ("Submitted", "已提交"),
    "status_skipped": ("Skipped", "已跳过"),
    "status_returned": ("Returned for re-annotation", "已退回重新评分"),
    "status_withdrawn": ("Withdrawn (reassigned)", "已撤回（已重新分配）"),
    "status_ready": ("All answered, not submitted yet", "已全部作答，尚未提交"),
    "returned_banner": ("Returned for re-annotation:", "已退回重新评分："),
    "flagged_banner": ("You flagged this dialogue:", "您已报告此对话的问题："),
    "closed_banner": ("This dialogue is {status}; answers can no longer change.",
                      "此对话{status}，答案不能再修改。"),
    "instructions": ("Instructions", "评分须知"),
    "dialogue": ("Dialogue", "对话"),
    "question_and_answer": ("Question and answer", "问题与回答"),
    "self_report": ("Patient's self-report", "患者自述"),
    "role_doctor": ("Doctor", "医生"),
    "role_patient": ("Patient", "患者"),
    "role_measurement": ("Measurement", "检查结果"),
    "role_question": ("Question", "问题"),
    "role_answer": ("Answer", "回答"),
    "role_reference": ("Reference answer", "参考答案"),
    "redact": ("Redact selected text", "隐去所选文字"),
    "redact_hint": ("Hide personal information you selected in the dialogue", "隐去您在对话中选中的个人信息"),
    "items": ("Items", "条目"),
    "yes": ("Yes", "是"),
    "no": ("No", "否"),
    "comment": ("Comment", "评论"),
    "comment_on_item": ("Comment on item {code}", "对条目 {code} 的评论"),
    "answer_to_item": ("Answer to item {code}", "条目 {code} 的回答"),
    "saved": ("Saved", "已保存"),
    "dialogue_comment": ("Comment on the whole dialogue (optional)", "对整个对话的评论（可选）"),
    "answer_comment": ("Comment on the whole answer (optional)", "对整个回答的评论（可选）"),
    "submit": ("Submit", "提交"),
    "skip_button": ("Skip…", "跳过…"),
    "flag_button": ("Flag a problem…", "报告问题…"),
    "next_dialogue": ("Next dialogue", "下一个对话"),
    "next_answer": ("Next answer", "下一个回答"),
    "shortcuts": ("Keyboard shortcuts", "键盘快捷键"),
    "shortcut_move": ("next item, previous item", "下一条目，上一条目"),
    "shortcut_answer": ("yes, no; levels and scale points: their number", "是，否；等级和分值：按其数字"),
    "shortcut_two_digits": ("scales up to 10 or more: type both digits (1 0 = 10); scales in half points: the point "
                            "and its decimals (4 . 5 = 4.5); or ← → to step",
                            "10 分及以上的量表：输入两位数字（1 0 = 10）；半分量表：输入分数及小数（4 . 5 = 4.5）；"
                            "或用 ← → 逐步调整"),
    "shortcut_text": ("Enter on a free-text item writes in it, Esc leaves it",
                      "在自由文本条目上按 Enter 开始输入，按 Esc 离开"),
    "shortcut_submit": ("Enter elsewhere: submit, once every item is answered and saved",
                        "在其他位置按 Enter：所有条目均已作答并保存后提交"),
    "shortcut_next_dialogue": ("next dialogue (answers are already saved)", "下一个对话（答案已保存）"),
    "shortcut_next_answer": ("next answer (answers are already saved)", "下一个回答（答案已保存）"),
    "skip_title": ("Skip this dialogue", "跳过此对话"),
    "skip_why": ("Why do you skip it?", "为什么跳过？"),
    "skip_confirm": ("Skip dialogue", "跳过对话"),
    "cancel": ("Cancel", "取消"),
    "flag_title": ("Flag a problem", "报告问题"),
    "flag_what": ("What is wrong with this dialogue?", "此对话有什么问题？"),
    "flag_confirm": ("Send flag", "发送"),
}

#: Phrases the rating page's script shows (static/js/answer_sheet.js and rating.js), sent as one JSON block.
SCRIPT_PHRASES: dict[str, tuple[str, str]] = {
    "saved": PHRASES["saved"],
    "saving": ("Saving…", "保存中…"),
    "retrying": ("Not saved yet, retrying…", "尚未保存，正在重试…"),
    "failed": ("Not saved: {reason}", "未保存：{reason}"),
    "refused": ("refused", "被拒绝"),
    "session_ended": ("Your session has ended. Log in again in another tab: {n} answer(s) are kept in this browser "
                      "and will be sent automatically.",
                      "您的登录已过期。请在另一个标签页重新登录：{n} 个答案保存在此浏览器中，将自动发送。"),
    "pending": ("{n} answer(s) not saved yet. They are kept in this browser and sent as soon as the server answers.",
                "{n} 个答案尚未保存。它们保存在此浏览器中，服务器一响应就会发送。"),
    "waiting": ("Waiting to send", "等待发送"),
    "waiting_offline": ("{n} answer(s) waiting to send: you are offline. They are kept in this browser and sent when "
                        "the connection is back.",
                        "{n} 个答案等待发送：您已离线。它们保存在此浏览器中，连接恢复后自动发送。"),
    "submit": PHRASES["submit"],
    "submit_left": ("Submit ({n} left)", "提交（还剩 {n} 项）"),
    "n_waiting": ("{n} waiting", "{n} 个等待发送"),
    "leave_unsubmitted": ("Every item is answered but this is not submitted yet. Leave it unsubmitted?",
                          "所有条目均已作答，但尚未提交。确定不提交就离开吗？"),
    "unreachable": ("Could not reach the server; your answers are kept. Try again in a moment.",
                    "无法连接服务器；您的答案已保留。请稍后再试。"),
    "server_refused": ("The server refused that.", "服务器拒绝了此操作。"),
    "redact_select": ("Select the words to hide in one turn first.", "请先在一个发言中选中要隐去的文字。"),
    "redact_one_turn": ("Select text inside a single turn (not across turns or redacted parts).",
                        "请在单个发言内选择文字（不要跨发言或已隐去的部分）。"),
    "redact_one_char": ("Select at least one character.", "请至少选择一个字符。"),
    "redact_failed": ("Could not redact; try again.", "未能隐去；请重试。"),
}


def language(lang: str | None) -> str:
    return lang if lang in LANGUAGES else "en"


def phrase(key: str, lang: str | None, **values) -> str:
    """The phrase ``key`` in ``lang`` (English for anything else), placeholders filled from ``values``."""
    english, chinese = PHRASES[key]
    text = chinese if language(lang) == "zh" else english
    return text.format(**values) if values else text


def script_phrases(lang: str | None) -> dict[str, str]:
    """Every phrase of the rating page's script in ``lang`` (placeholders left for the script to fill)."""
    index = 1 if language(lang) == "zh" else 0
    return {key: pair[index] for key, pair in SCRIPT_PHRASES.items()}


def text_language(text: str) -> str:
    """"zh" when the text holds Chinese characters, else "en" (for a lang attribute)."""
    return "zh" if _HAN.search(text) else "en"
