"""The conversations of the demo store, written out as a person would have had them.

Each session is a list of steps the demo plays through the write API, written
here as tuples (a readable table) and read as the NamedTuples below (`steps()`):

- ("user", text) / ("assistant", text) / ("assistant", text, reasoning)
- ("tool", name, arguments, status, approval, result, summary, duration_ms[, colors]):
  the assistant calls a tool; `summary` set means the result was too big and
  the model was sent the summary instead; `colors` = the tool returned a picture
- ("image", sender, label, (r, g, b), (r, g, b)): a picture in the conversation
- ("compact", summary): the conversation so far was compacted into a summary
- ("pending", name, arguments, kind): a tool call left waiting on the human
- ("notice", text) / ("error", text): lines only the terminal timeline shows
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NamedTuple

Color = tuple[int, int, int]


class User(NamedTuple):
    text: str


class Assistant(NamedTuple):
    text: str
    reasoning: str | None = None


class Tool(NamedTuple):
    name: str
    arguments: dict[str, Any]
    status: str  # ok | error | declined | skipped
    approval: str | None
    result: str
    summary: str | None  # what the model was sent instead of an oversized result
    duration_ms: int | None
    colors: tuple[Color, Color] | None = None  # the tool returned a picture


class Image(NamedTuple):
    sender: str
    label: str
    start: Color
    end: Color


class Compact(NamedTuple):
    summary: str


class Pending(NamedTuple):
    name: str
    arguments: dict[str, Any]
    kind: str


class Shown(NamedTuple):
    """A line only the terminal timeline shows: a notice or an error."""

    type: str
    text: str


Step = User | Assistant | Tool | Image | Compact | Pending | Shown

_STEPS = {
    "user": User, "assistant": Assistant, "tool": Tool, "image": Image, "compact": Compact,
    "pending": Pending, "notice": lambda text: Shown("notice", text),
    "error": lambda text: Shown("error", text),
}  # fmt: skip


def steps(session: dict) -> list[Step]:
    """A session's steps, from the table below."""
    return [_STEPS[raw[0]](*raw[1:]) for raw in session["steps"]]


TELEGRAM_ANA = "telegram:482913"
TELEGRAM_BJORN = "telegram:771204"
WIDGET = "widget:ab12"

LONG_LOG = "\n".join(
    f"2026-11-{d:02d} 03:00:{s:02d} rsync: sent {1000 + d * 37 + s} bytes  received {200 + s} bytes"
    for d in range(1, 29)
    for s in range(0, 60, 7)
)

SESSIONS: list[dict] = [
    {
        # The seed's worked example ("one chat turn, row by row"), with its ids,
        # so the seed's example queries return rows against the demo store.
        "owner": None,
        "title": "Open PRs and a screenshot of the list",
        "persona": None,
        "model": "llama3.2:3b",
        "hours_ago": 6,
        "run_ids": ["run_7f3a"],
        "steps": [
            ("user", "Summarize the open PRs and screenshot the PR list"),
            (
                "tool",
                "spawn_subagent",
                {"agent": "researcher", "task": "Read the open PRs"},
                "ok",
                None,
                "3 open PRs: #41 fix the CSV export, #42 bump SQLite to 3.47, #43 add a dark mode",
                None,
                9100,
            ),
            (
                "tool",
                "browser_screenshot",
                {"url": "https://github.com/marie/kaja-notes/pulls"},
                "ok",
                None,
                "Saved screenshot pr-list.png (1280×800)",
                None,
                920,
                ((36, 41, 46), (88, 166, 255)),
            ),
            (
                "assistant",
                "There are 3 open PRs: #41 fixes the CSV export, #42 bumps SQLite to 3.47 and #43 adds a dark mode. #42 is the only one with failing checks. The screenshot of the list is attached.",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Tomato leaves curling in the heat",
        "persona": "gardener",
        "model": "claude-sonnet-4.5",
        "hours_ago": 3,
        "steps": [
            (
                "user",
                "My tomato leaves are curling upwards since the heatwave. The plants are in pots on a south-facing balcony. Should I worry?",
            ),
            (
                "assistant",
                "Upward leaf curl in a heatwave is usually physiological: the plant rolls its leaves to lose less water. It isn't a disease. Check whether the soil dries out between waterings; pots on a south balcony can go bone dry by mid-afternoon.",
                "Heat stress vs. viral curl: the upward roll and the timing point to heat. Ask about watering.",
            ),
            ("user", "I water every evening. Here is a photo of the worst one."),
            ("image", "user", "tomato leaf", (46, 139, 87), (189, 183, 107)),
            (
                "tool",
                "web_search",
                {"query": "tomato leaf roll heat physiological shade cloth"},
                "ok",
                None,
                "1. Physiological leaf roll in tomatoes – extension.umn.edu\n2. Using shade cloth in hot climates – rhs.org.uk\n3. Watering container tomatoes in summer – gardenersworld.com",
                None,
                840,
            ),
            (
                "assistant",
                "From the photo the leaves are rolled but still green, with no yellow mottling or purple veins, so it is heat, not a virus. Three things help: water in the morning as well as the evening during the heatwave, mulch the pots, and put up a 30–40 % shade cloth from noon to four. The curl itself won't undo, but new leaves will grow flat.",
            ),
            ("user", "Where do I get shade cloth? And is 40 % too much for tomatoes?"),
            (
                "assistant",
                "Any garden centre sells it by the metre. 30–40 % is right for tomatoes in a heatwave; they still get plenty of light. Take it down once the temperatures drop below 30 °C.",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Crème brûlée for eight",
        "persona": "chef",
        "model": "gpt-5-mini",
        "hours_ago": 20,
        "steps": [
            (
                "user",
                "I'm making crème brûlée for eight people on Saturday. Can you scale the recipe and tell me what I can do the day before?",
            ),
            (
                "assistant",
                "For eight ramekins: 900 ml double cream, 1 vanilla pod, 9 egg yolks, 110 g caster sugar, plus about 8 tsp demerara for the tops. Bake at 150 °C in a bain-marie for 35–40 minutes, until set at the edges and just wobbly in the centre. You can bake them the day before and keep them covered in the fridge; only the caramel has to be done just before serving.",
            ),
            ("user", "I don't have a blowtorch. Does the grill work for the brûlée top?"),
            (
                "assistant",
                "It does, with care: put the ramekins in a tray of ice water so the custard stays cold, grill as close to the element as you can, and turn the tray every 30 seconds. It takes 2–4 minutes. A blowtorch gives a thinner, crisper crust, but the grill is fine.",
            ),
            ("user", "What about a café au lait flavour for two of them?"),
            (
                "assistant",
                "Infuse 2 tsp of instant espresso into the cream for those two (about 225 ml of the 900). Keep the vanilla for the other six. Label the ramekins: they look the same once caramelised.",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Refactor the invoice parser",
        "persona": "engineer",
        "model": "claude-sonnet-4.5",
        "hours_ago": 26,
        "steps": [
            (
                "user",
                "The invoice parser in billing/parse.py has grown into one 300-line function. Can you split it up without changing behaviour?",
            ),
            (
                "tool",
                "read_file",
                {"path": "billing/parse.py"},
                "ok",
                None,
                "def parse_invoice(text):\n    # 312 lines: header, line items, VAT, totals, currency detection\n    ...",
                None,
                12,
            ),
            (
                "assistant",
                "It does four things in sequence: header fields, line items, VAT lines and totals, with currency detection sprinkled through. I'll extract one function per section and a small dataclass for the result, then run the tests.",
                "Plan: parse_header, parse_lines, parse_vat, parse_totals; keep the public signature.",
            ),
            (
                "tool",
                "edit_file",
                {
                    "path": "billing/parse.py",
                    "summary": "extract parse_header, parse_lines, parse_vat, parse_totals",
                },
                "ok",
                "approved",
                "Applied 4 hunks to billing/parse.py (+96 −71).",
                None,
                35,
            ),
            (
                "tool",
                "run_tests",
                {"command": "pytest tests/billing -q"},
                "error",
                None,
                "FAILED tests/billing/test_parse.py::test_eur_with_comma_decimal - AssertionError: Decimal('1234.5') != Decimal('1234.50')\n"
                + "\n".join(
                    f"tests/billing/test_parse.py::test_case_{i} PASSED" for i in range(400)
                ),
                "412 tests, 1 failure: test_eur_with_comma_decimal expects Decimal('1234.50') but got Decimal('1234.5') (trailing zero lost when the comma decimal is normalised).",
                5230,
            ),
            (
                "assistant",
                "One failure: amounts written with a decimal comma lose their trailing zero, because parse_totals now normalises through float. I'll keep them as Decimal end to end.",
            ),
            (
                "tool",
                "edit_file",
                {"path": "billing/parse.py", "summary": "parse amounts with Decimal, never float"},
                "ok",
                "approved",
                "Applied 1 hunk to billing/parse.py (+3 −3).",
                None,
                20,
            ),
            (
                "tool",
                "run_tests",
                {"command": "pytest tests/billing -q"},
                "ok",
                None,
                "412 passed in 4.87s",
                None,
                4870,
            ),
            ("assistant", "All 412 tests pass. Want me to commit it?"),
            ("user", "Yes, and push it to a branch."),
            (
                "tool",
                "shell",
                {"command": "git push origin refactor/invoice-parser"},
                "declined",
                "declined",
                "The user declined this command.",
                None,
                None,
            ),
            ("user", "Sorry, don't push yet, I want to read the diff first. Just commit."),
            (
                "tool",
                "shell",
                {"command": "git commit -am 'Split the invoice parser into sections'"},
                "ok",
                "approved",
                "[refactor/invoice-parser 4c1e2d9] Split the invoice parser into sections\n 1 file changed, 99 insertions(+), 74 deletions(-)",
                None,
                140,
            ),
            (
                "tool",
                "shell",
                {"command": "git log -1 --stat"},
                "skipped",
                None,
                "Skipped: the previous step already showed the commit.",
                None,
                None,
            ),
            (
                "assistant",
                "Committed on refactor/invoice-parser, not pushed. The diff is `git show HEAD`.",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Train from Zürich to Genève",
        "persona": None,
        "model": "gpt-5-mini",
        "hours_ago": 50,
        "steps": [
            (
                "user",
                "What's the fastest train from Zürich HB to Genève on a Friday morning, arriving before 11?",
            ),
            (
                "tool",
                "web_search",
                {"query": "SBB Zürich HB Genève Friday morning timetable"},
                "ok",
                None,
                "IC 1 Zürich HB 07:32 → Genève 10:18 (2h46, direct)\nIC 5 Zürich HB 07:04 → Genève 10:12 via Biel/Bienne",
                None,
                1210,
            ),
            (
                "assistant",
                "The direct IC 1 leaves Zürich HB at 07:32 and reaches Genève at 10:18. The 07:04 IC 5 via Biel/Bienne arrives six minutes earlier but with a change. With a Halbtax a second-class ticket is about CHF 45; Supersaver fares can be cheaper if you book ahead.",
            ),
            ("notice", "Prices are from the SBB site and may change."),
            ("user", "Is the lake side of the train better for the view?"),
            (
                "assistant",
                "Yes: sit on the left going to Genève. After Lausanne the line runs along Lac Léman with the Alps across the water.",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Nightly backup with rsync",
        "persona": "sysadmin",
        "model": "claude-sonnet-4.5",
        "hours_ago": 1,
        "steps": [
            (
                "user",
                "Set up a nightly backup of ~/Documents to my NAS at /mnt/nas/backup with rsync, keeping deleted files for 30 days.",
            ),
            (
                "assistant",
                "I'll use rsync with --backup-dir so deleted and changed files are moved to a dated folder, then prune folders older than 30 days. First let me look at the last runs of the existing script.",
            ),
            (
                "tool",
                "read_file",
                {"path": "/var/log/backup.log"},
                "ok",
                None,
                LONG_LOG,
                "The backup log covers 1–28 November: one run a night at 03:00, all completed, about 1–2 kB sent each night; no errors.",
                60,
            ),
            (
                "assistant",
                "The old script ran every night without errors, but it never kept deleted files. Here is the cron line I'd install:\n\n0 3 * * * rsync -a --delete --backup --backup-dir=/mnt/nas/backup/deleted/$(date +\\%F) ~/Documents/ /mnt/nas/backup/current/",
            ),
            (
                "error",
                "The NAS was not mounted when I checked /mnt/nas: the job will fail until it is.",
            ),
            ("user", "It's mounted now. Go ahead and install it."),
            (
                "pending",
                "shell",
                {
                    "command": "crontab -l | { cat; echo '0 3 * * * /usr/local/bin/nightly-backup'; } | crontab -"
                },
                "approval",
            ),
        ],
    },
    {
        "owner": None,
        "title": "Quarterly budget review",
        "persona": "analyst",
        "model": "gpt-5",
        "hours_ago": 80,
        "steps": [
            (
                "user",
                "Let's go through the Q3 household budget. Income was 14,200 over the quarter.",
            ),
            (
                "assistant",
                "Good. Give me the spending by category and I'll compare it against the plan we set in June.",
            ),
            (
                "user",
                "Rent 4,050. Groceries 1,920. Transport 610. Utilities 540. Eating out 780. Savings 3,000.",
            ),
            (
                "assistant",
                "That's 10,900 accounted for, leaving 3,300 unallocated. Eating out is 30 % over the 600 you planned; groceries are on target.",
            ),
            ("user", "The 3,300 is probably the holiday and the car repair."),
            (
                "assistant",
                "Then let's add those two as categories so next quarter's review shows them.",
            ),
            (
                "compact",
                "Q3 review so far: income 14,200; rent 4,050, groceries 1,920, transport 610, utilities 540, eating out 780 (30 % over plan), savings 3,000; 3,300 left, probably the holiday and a car repair, to be added as categories.",
            ),
            ("user", "Car repair was 1,150. The holiday was 2,050 including the ferry."),
            (
                "assistant",
                "Then the quarter balances exactly. For Q4 I'd raise the eating-out budget to 700 and keep an irregular-expenses line of 500 a month for things like the car.",
            ),
            ("user", "Sounds right. Can you write that down as the plan for Q4?"),
            (
                "tool",
                "write_note",
                {
                    "key": "budget-q4",
                    "content": "Q4 plan: eating out 700, irregular expenses 500/month, savings 3,000",
                },
                "ok",
                None,
                "Saved note budget-q4.",
                None,
                8,
            ),
            (
                "assistant",
                "Saved as a note. I'll remind you of it when we do the Q4 review in January.",
            ),
            (
                "compact",
                "Q3 balanced once the car repair (1,150) and the holiday (2,050) were added. Q4 plan saved as note budget-q4: eating out 700, irregular expenses 500 a month, savings 3,000.",
            ),
            ("user", "One more thing: what's our savings rate for the quarter?"),
            (
                "assistant",
                "3,000 of 14,200 is 21 %. Counting the 500 a month you plan to set aside for irregular expenses, it would be closer to 32 % in Q4.",
            ),
        ],
    },
    {
        "owner": TELEGRAM_ANA,
        "title": "Lista de la compra para la semana",
        "persona": None,
        "model": "gpt-5-mini",
        "hours_ago": 5,
        "steps": [
            (
                "user",
                "Hola! Necesito una lista de la compra para la semana, somos dos y no comemos carne.",
            ),
            (
                "assistant",
                "¡Claro! Para dos personas y siete días sin carne: garbanzos y lentejas, arroz, pasta integral, tofu, huevos, yogur, queso fresco, espinacas, tomates, pimientos, calabacín, cebollas, ajo, limones, plátanos y manzanas. ¿Quieres que lo ordene por pasillos del supermercado?",
            ),
            ("user", "Sí, y añade café y pan."),
            (
                "assistant",
                "Verduras y fruta: espinacas, tomates, pimientos, calabacín, cebollas, ajo, limones, plátanos, manzanas.\nDespensa: garbanzos, lentejas, arroz, pasta integral, café.\nFrescos: tofu, huevos, yogur, queso fresco.\nPanadería: pan.",
            ),
        ],
    },
    {
        "owner": TELEGRAM_ANA,
        "title": "Photo of a receipt",
        "persona": None,
        "model": "gpt-5-mini",
        "hours_ago": 30,
        "steps": [
            (
                "user",
                "Can you read this receipt and tell me how much I spent on cleaning products?",
            ),
            ("image", "user", "receipt", (245, 245, 240), (180, 180, 170)),
            (
                "assistant",
                "The receipt lists two cleaning products: a multi-surface spray at 3.49 and dishwasher tablets at 7.99, so 11.48 in total.",
            ),
        ],
    },
    {
        "owner": TELEGRAM_ANA,
        "title": "Recordatorio: cita con el dentista",
        "persona": None,
        "model": "gpt-5-mini",
        "hours_ago": 100,
        "steps": [
            ("user", "Recuérdame la cita con el dentista el martes a las 9:30."),
            (
                "tool",
                "schedule_reminder",
                {"when": "2026-12-01T08:30:00Z", "text": "Cita con el dentista a las 9:30"},
                "ok",
                None,
                "Reminder scheduled for Tuesday 08:30 UTC.",
                None,
                25,
            ),
            (
                "assistant",
                "Hecho: te escribiré el martes a las 8:30 para recordarte la cita de las 9:30.",
            ),
        ],
    },
    {
        "owner": TELEGRAM_BJORN,
        "title": "Sauna temperature",
        "persona": None,
        "model": "claude-haiku-4.5",
        "hours_ago": 8,
        "steps": [
            (
                "user",
                "What's a good sauna temperature for a beginner? My neighbour in Göteborg swears by 100 degrees.",
            ),
            (
                "assistant",
                "For a beginner 70–80 °C is plenty, for 8–12 minutes at a time, with a cool shower and a rest between rounds. 100 °C is for people used to it; the löyly (water on the stones) makes it feel hotter still.",
            ),
            ("user", "And is it ok right after running?"),
            (
                "assistant",
                "Wait 10–15 minutes and drink something first: after a run you're already dehydrated and your blood pressure is low.",
            ),
        ],
    },
    {
        "owner": TELEGRAM_BJORN,
        "title": "Running plan for the Göteborgsvarvet",
        "persona": "coach",
        "model": "claude-haiku-4.5",
        "hours_ago": 150,
        "steps": [
            (
                "user",
                "I want to run the Göteborgsvarvet half marathon in May. I can run 10 km now. Make me a plan?",
            ),
            (
                "assistant",
                "From 10 km to a half marathon in about 24 weeks is comfortable. Run three times a week: one easy run, one with intervals or tempo, and a long run that grows by about 1 km every week, with an easier week every fourth week. Peak at 18–19 km three weeks before race day, then taper.",
            ),
            (
                "tool",
                "create_calendar",
                {"name": "Göteborgsvarvet", "weeks": 24},
                "error",
                None,
                "Calendar API error 403: the calendar integration is not connected.",
                None,
                310,
            ),
            (
                "assistant",
                "I couldn't put it in your calendar: the calendar integration isn't connected. You can connect it in the web app, or I can send you each week's runs here on Sunday evenings.",
            ),
            ("user", "Send them here every Sunday, that works."),
        ],
    },
    {
        "owner": WIDGET,
        "title": "Pricing question from the website",
        "persona": "support",
        "model": "gpt-5-mini",
        "hours_ago": 12,
        "steps": [
            ("user", "Hi, does the family plan include the Telegram bot for every member?"),
            (
                "assistant",
                "Yes. Every member of a family plan can link their own Telegram account; each gets their own history and notes, separate from the others.",
            ),
            ("user", "Can I try it before paying?"),
            (
                "assistant",
                "There is a 14-day trial of the family plan, no card needed. You can start it from the pricing page.",
            ),
        ],
    },
]

# How often the agent has used each note, and how long ago it last did.
NOTE_USES: dict[tuple[str, str], tuple[int, timedelta]] = {
    ("", "name"): (31, timedelta(hours=3)),
    ("", "diet"): (6, timedelta(hours=20)),
    ("", "budget-q4"): (4, timedelta(hours=9)),
    ("", "code-style"): (12, timedelta(hours=2)),
    (TELEGRAM_ANA, "dieta"): (9, timedelta(hours=5)),
    (TELEGRAM_ANA, "dentista"): (2, timedelta(hours=22)),
    (TELEGRAM_BJORN, "running"): (3, timedelta(hours=12)),
}

NOTES: list[tuple[str, str, str, str, list[str], bool]] = [
    # (owner, key, content, importance, tags, sticky)
    (
        "",
        "name",
        "The user's name is Marie; she lives in Lyon and grows tomatoes on her balcony.",
        "high",
        ["profile"],
        True,
    ),
    (
        "",
        "diet",
        "Cooks for guests often; likes French desserts (crème brûlée, tarte tatin).",
        "medium",
        ["food"],
        False,
    ),
    (
        "",
        "budget-q4",
        "Q4 plan: eating out 700, irregular expenses 500/month, savings 3,000.",
        "high",
        ["finance"],
        True,
    ),
    (
        "",
        "code-style",
        "Prefers small functions, Decimal for money, and reading diffs before pushing.",
        "medium",
        ["work"],
        False,
    ),
    (
        TELEGRAM_ANA,
        "dieta",
        "Ana y su pareja no comen carne; compran para dos.",
        "high",
        ["perfil"],
        True,
    ),
    (
        TELEGRAM_ANA,
        "dentista",
        "Cita con el dentista los martes por la mañana.",
        "low",
        ["salud"],
        False,
    ),
    (
        TELEGRAM_BJORN,
        "running",
        "Björn runs 10 km; training for the Göteborgsvarvet half marathon in May.",
        "medium",
        ["sport"],
        False,
    ),
    (
        WIDGET,
        "interest",
        "Visitor asked about the family plan and the trial.",
        "low",
        ["sales"],
        False,
    ),
]

DATASETS: list[tuple[str, str, int, dict[str, str], bool]] = [
    # (topic, owner, version, answers, completed)
    ("onboarding", "", 1, {"name": "Marie", "city": "Lyon", "languages": "fr, en"}, True),
    ("onboarding", "", 2, {"name": "Marie", "city": "Lyon"}, False),
    ("onboarding", TELEGRAM_ANA, 1, {"name": "Ana", "city": "Sevilla", "languages": "es"}, True),
    ("fitness", TELEGRAM_BJORN, 1, {"goal": "half marathon", "current_km": "10"}, True),
]
