"""Names: words, conventions and meaning (hsa.text.names); the general tables every name transform
draws from (transforms/lexicon.yaml, hsa/text/abbreviations.yaml); and the promise that no rename
gives an identifier the meaning of another of its kind (transforms and verification)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsa.augment.mapping import Mapping
from hsa.augment.recipe import Recipe
from hsa.augment.rename import rename_episode
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.model.episode import Episode
from hsa.text.mentions import parameter_mentions
from hsa.text.names import (
    CONVENTIONS,
    UNCOUNTABLE,
    abbreviation_groups,
    convention_of,
    conventions_of,
    is_plural,
    meaning,
    name_words,
    plural,
    shared_conventions,
    write_name,
)
from hsa.transforms._names import CONVENTION_SPLITS, echoes, lexicon
from hsa.verify import VerificationFailed, identifiers_by_kind, verify_variant
from tests.strategies import clashing_episode_dicts

RENAMERS = [
    "skill_id_synonym",
    "skill_id_case",
    "skill_id_namespace",
    "skill_id_mask",
    "tool_name_paraphrase",
    "tool_name_mask",
    "parameter_name_paraphrase",
    "parameter_name_mask",
    "hook_implementation_swap",
]


# ---- words and conventions -----------------------------------------------------------------


def test_words_of_names_in_any_convention():
    assert name_words("getHTTPStatus2") == ["get", "HTTP", "Status2"]
    # Digits stay in their word (written out again, k8s is no k_8_s, s3_bucket no s_3_bucket)
    assert name_words("k8s.crashloop_backoff") == ["k8s", "crashloop", "backoff"]
    assert name_words("h264Video") == ["h264", "Video"]
    assert name_words("HTTP2Status") == ["HTTP2", "Status"]
    assert name_words("x86_64") == ["x86", "64"]
    assert name_words("K8S_NAMESPACE") == ["K8S", "NAMESPACE"]
    # Latin letters beyond ASCII are letters of the word (no "ausfÜHrungsdatum", "straSSE")
    assert name_words("ausführungsdatum") == ["ausführungsdatum"]
    assert name_words("empfängerName") == ["empfänger", "Name"]
    assert write_name(name_words("überweisung_prüfen"), "camel") == "überweisungPrüfen"
    assert write_name(name_words("straße_nummer"), "pascal") == "StraßeNummer"
    assert name_words("dépôt-légal") == ["dépôt", "légal"]
    assert write_name(name_words("s3_bucket"), "camel") == "s3Bucket"
    assert write_name(name_words("getIpv4Address"), "snake") == "get_ipv4_address"
    assert name_words("shop.ITEM_QA") == ["shop", "ITEM", "QA"]
    assert name_words("item-qa") == ["item", "qa"]
    assert name_words("请调用get_price") == ["请调用", "get", "price"]


def test_conventions_are_written_and_recognised():
    words = ["get", "flight", "status"]
    written = {c: write_name(words, c) for c in CONVENTIONS}
    assert written == {
        "snake": "get_flight_status",
        "camel": "getFlightStatus",
        "kebab": "get-flight-status",
        "pascal": "GetFlightStatus",
        "screaming_snake": "GET_FLIGHT_STATUS",
        "title_snake": "Get_Flight_Status",
    }
    for convention, name in written.items():
        assert convention in conventions_of(name)
    assert conventions_of("get") == {"snake", "camel", "kebab"}  # one word fits several
    assert conventions_of("math.factorial_of") == {"snake"}  # dots are namespaces
    assert shared_conventions(["get_price", "getPrice"]) == frozenset()  # a mixed list
    assert convention_of(["get", "get_price"]) == "snake"
    assert not set(CONVENTION_SPLITS["train"]) & set(CONVENTION_SPLITS["heldout"])


@given(
    words=st.lists(st.text("abcdefghij", min_size=2, max_size=6), min_size=1, max_size=4),
    convention=st.sampled_from(CONVENTIONS),
)
def test_a_name_in_any_convention_keeps_its_meaning(words, convention):
    # (one-letter words run together in camelCase: "aAA" reads as a, AA in any reading)
    name = write_name(words, convention)
    assert convention in conventions_of(name)
    assert meaning(name) == meaning(write_name(words, "snake"))


# ---- meaning ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("item_ids", "itemIdentifier"),
        ("item_ids", "identifier_of_the_item"),
        ("product_id", "PRODUCT-IDENT"),
        ("regex", "regular_expression"),
        ("user_name", "name_user"),
        ("categories", "category"),
        ("search_flights", "flight_search"),
    ],
)
def test_names_that_say_the_same(a, b):
    assert meaning(a) == meaning(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("item_id", "product_id"),
        ("from_date", "to_date"),
        ("no_cache", "number_cache"),
        ("get_price", "get_price_history"),
    ],
)
def test_names_that_say_different_things(a, b):
    assert meaning(a) != meaning(b)


# ---- the general tables ----------------------------------------------------------------------


def _words(members) -> set[str]:
    return {w for m in members for w in m.split("_")}


def test_lexicon_and_abbreviations_split_into_disjoint_parts():
    groups = lexicon().groups
    abbreviations = abbreviation_groups()
    train = _words(m for g in groups for m in g.train) | _words(
        m for g in abbreviations for m in g["train"]
    )
    heldout = _words(m for g in groups for m in g.heldout) | _words(
        m for g in abbreviations for m in g["heldout"]
    )
    assert not train & heldout  # not even a word is shared across the splits
    # a general lexicon, not a handful of words; groups of a wrong sense go (audits pruned some)
    assert len(groups) >= 190 and len(train) >= 480 and len(heldout) >= 290
    for group in groups:
        assert group.train and group.heldout and group.pos in ("verb", "noun", "adj")
        for member in group.train + group.heldout:
            assert member == member.lower() and all(w.isalpha() for w in member.split("_"))


def test_a_word_has_one_default_sense_per_part_of_speech():
    defaults = Counter(
        (m, g.pos) for g in lexicon().groups if not g.when for m in g.train + g.heldout
    )
    assert [k for k, n in defaults.items() if n > 1] == []


def _offered(name: str, context: set[str], split: str) -> set[str]:
    """Every word the tables of ``split`` offer for any phrase of ``name`` in ``context``."""
    from hsa.transforms._names import slots

    found = slots([name_words(name)], split, context)
    return {w for slot in found for option in slot.options for w in option}


# Names as tools of any domain write them (BFCL's among them), with the words of their tool's
# text, and words the tables once offered for them that say something else there: a customer's
# name is no label, a US state no status, a tip no advice, a model's tokens no access tokens.
NEIGHBOURS_NOT_SYNONYMS = [
    ("customer_name", {"customer", "email"}, {"label", "designation", "moniker"}),
    ("state", {"city", "weather", "us"}, {"status", "condition"}),
    ("calculate_tip", {"bill", "restaurant", "percentage"}, {"advice"}),
    ("max_tokens", {"model", "text", "generate"}, {"access", "credential"}),
    ("page", {"results", "search", "limit"}, {"sheet", "leaf"}),
    ("calculate_average", {"numbers", "list"}, {"median", "like", "typical"}),
    ("sum", {"numbers", "add", "math"}, {"amount", "figure"}),
    ("departure_time", {"train", "station", "rail"}, {"takeoff", "leaving"}),
    ("user_agent", {"http", "request", "header"}, {"assistant", "aide"}),
    ("thread_count", {"cpu", "process", "parallel"}, {"discussion"}),
    ("battery_level", {"device", "phone", "charge"}, {"degree", "extent"}),
    ("date_format", {"date", "string"}, {"layout", "encoding"}),
    ("search_keyword", {"search", "products"}, {"tag", "label"}),
    ("job_title", {"employment", "salary", "company"}, {"task", "todo"}),
    ("get_recipe", {"ingredients", "cuisine"}, {"dish"}),
    ("language", {"code", "python", "snippet"}, {"tongue", "idiom"}),
    ("loan_amount", {"bank", "interest"}, {"credit", "line", "advance"}),
    ("currency", {"exchange", "rate"}, {"money", "denomination"}),
    ("music_genre", {"songs", "artist"}, {"audio", "sound"}),
    ("health_check", {"server", "endpoint"}, {"wellness", "wellbeing"}),
    ("player_id", {"video", "media", "stream"}, {"athlete", "competitor"}),
    ("appointment_id", {"doctor", "clinic"}, {"slot"}),
    ("translate_text", {"language", "target"}, {"localize"}),
    ("random_seed", {"numbers"}, {"arbitrary"}),
    ("invite_user", {"group", "chat"}, {"bid", "summon"}),
    ("gift_card", {"balance", "store"}, {"giveaway", "keepsake"}),
    ("emergency_contact", {"patient", "phone"}, {"connection", "acquaintance"}),
    # contact details (an e-mail address, a phone number) are no person
    ("contact", {"order", "email", "phone", "receipt"}, {"person", "correspondent"}),
    ("update_contact", {"customer", "email", "address"}, {"person", "correspondent"}),
    ("write_review", {"product", "rating", "stars"}, {"save", "persist", "store"}),
    # a phone call-back is no hook, a login session no meeting, a bank statement no invoice
    ("schedule_callback", {"phone", "call", "customer", "time"}, {"hook", "interceptor"}),
    ("callback_number", {"support", "ticket", "phone"}, {"hook", "interceptor"}),
    ("expire_sessions", {"login", "sign", "user", "password"}, {"meeting", "conference", "huddle"}),
    ("session_id", {"chat", "browser", "cookie"}, {"meeting", "conference", "huddle"}),
    ("get_statement", {"bank", "account", "month", "transactions"}, {"invoice", "bill"}),
    ("statement_date", {"card", "credit", "balance"}, {"invoice", "bill"}),
    # an insurance claim, a claimed task: no redemption; a loyalty or TV program no script
    ("claim", {"insurance", "policy", "damage"}, {"redeem", "encash"}),
    ("claim_task", {"queue", "worker", "job"}, {"redeem", "encash"}),
    ("join_program", {"loyalty", "points", "member"}, {"script", "routine", "connect", "attach"}),
    ("program_schedule", {"tv", "channel", "broadcast"}, {"script", "routine"}),
    ("workout_routine", {"fitness", "exercise"}, {"script", "program"}),
    ("policy_number", {"insurance", "premium", "coverage"}, {"rules", "regulations", "terms"}),
    ("search_terms", {"search", "query", "results"}, {"policy", "rules", "regulations"}),
    ("attach_file", {"email", "upload"}, {"connect", "pair"}),
    # a mail rule's condition, a used item's condition: no status; terms and conditions no weather
    ("condition", {"mail", "rule", "folder", "messages"}, {"status", "current"}),
    ("item_condition", {"product", "used", "new"}, {"status", "current"}),
    ("order_status", {"order", "shipping"}, {"condition"}),
    ("terms_and_conditions", {"accept", "signup"}, {"weather", "meteo"}),
    # a suite is one kind of room; a meeting room is no hotel room
    ("room_type", {"hotel", "booking", "guest", "nights"}, {"suite"}),
    ("book_room", {"meeting", "team", "booking", "reservation"}, {"chamber", "suite", "guestroom"}),
    # a contact method, a payment method, an HTTP method are no functions; a one-time code, a
    # bank's branch code, a lab test's code no source code
    ("method", {"reset", "password", "one", "time", "code", "sms"}, {"function", "subroutine"}),
    ("payment_method", {"card", "class", "library", "fare"}, {"function", "procedure"}),
    ("http_method", {"request", "api", "url"}, {"function", "procedure", "subroutine"}),
    ("branch_code", {"bank", "sort", "account", "code"}, {"dev", "codeline", "source", "codebase"}),
    ("test_code", {"lab", "patient", "blood", "code"}, {"case", "trial", "source", "codebase"}),
    # a product's country of origin is no starting place, a trip's origin no provenance
    ("country_of_origin", {"product", "customs", "import"}, {"starting", "embarkation"}),
    ("origin", {"flight", "airport", "destination"}, {"provenance"}),
    # a held seat is not booked; to rejoin a meeting is no reply; a DNS record is no history
    ("book_flight", {"flight", "seat", "passenger"}, {"hold"}),
    ("hold_seat", {"flight", "seat", "passenger"}, {"book", "reserve"}),
    ("rejoin_meeting", {"meeting", "call"}, {"reply", "respond", "answer"}),
    ("get_records", {"database", "table", "dns"}, {"history", "archive"}),
    # a medical record is a patient's file, no table row nor log entry (BFCL)
    ("medical_records", {"disease", "patient", "medical"}, {"row", "rows", "entry", "entries"}),
    ("get_health_record", {"patient", "health", "doctor"}, {"row", "entry"}),
    # a clinic and a shopping live stream (audits of harnesses of new domains): a payment taken
    # is no disbursement (money paid out), a price no tariff, a person's height no elevation,
    # an invoice's billed line items no goods, an insurance member no client, a search query
    # no question, a record no acquisition, a delivery date no postage, a clothing size no
    # dimensions, a product's options (colour, gift wrap) no alternatives
    ("record_payment", {"invoice", "card", "amount"}, {"disbursement"}),
    ("unit_price", {"price", "product", "live"}, {"tariff"}),
    ("height_cm", {"weight", "size", "recommend"}, {"elevation", "tallness"}),
    ("line_items", {"invoice", "billed", "services", "price"}, {"goods", "merchandise"}),
    ("member_id", {"insurance", "plan", "coverage"}, {"client", "user", "patron"}),
    ("query", {"search", "patients", "text"}, {"question", "inquiry"}),
    ("get_patient", {"patient", "record"}, {"acquire"}),
    ("get_shipping_date", {"delivery", "postcode"}, {"postage", "freight"}),
    ("recommend_size", {"height", "weight", "clothing"}, {"dimensions", "measurement"}),
    ("options", {"size", "colour", "gift", "wrap"}, {"alternatives", "possibilities"}),
    # an incident-response harness (an audit of a new domain): on-call duty (PagerDuty) is no
    # tax, a metric's aggregate (avg, max, p99) no total, an outage incident no support ticket,
    # a Kubernetes service no endpoint
    ("pager_duty_ack", {"incident", "page", "alert", "on", "call"}, {"tax", "excise"}),
    ("duty_roster", {"shift", "staff", "schedule"}, {"tax", "excise"}),
    # a tax is no duty nor excise (kinds of tax): an income tax renamed income_duty is another
    ("income_tax", {"salary", "income", "payment"}, {"duty", "excise", "tariff"}),
    # an insurance claim's payout is no dividend
    ("payout_method", {"claim", "insurance", "policy"}, {"dividend", "distribution"}),
    ("aggregate", {"metric", "avg", "max", "p99", "query"}, {"total", "grand"}),
    ("incident_triage", {"outage", "alert", "page", "severity"}, {"ticket", "case"}),
    ("service", {"kubernetes", "namespace", "pods", "deployment"}, {"endpoint"}),
    # a food-delivery agent (an audit): a coupon issued is no problem; to apply for a refund is
    # no using it; a refund policy is no repaying
    ("issue_coupon", {"coupon", "order", "discount", "user"}, {"problem", "concern", "defect"}),
    ("apply_refund", {"refund", "order", "amount"}, {"use", "employ", "utilize"}),
    ("refund_policy", {"refund", "policy", "order"}, {"repay", "reimburse"}),
    # an IT and HR helpdesk (an audit): HR is no hour, a user group no cluster, a user no
    # patron, an audit log no critique, a password reset no clearing
    ("hr.leave.balance", {"employee", "leave", "vacation"}, {"hour", "hours"}),
    ("get_user_groups", {"directory", "account", "member"}, {"clusters", "brackets"}),
    ("get_user", {"directory", "account", "employee"}, {"client", "patron"}),
    ("audit_log", {"security", "event", "access"}, {"critique", "appraise"}),
    ("resetPassword", {"account", "login", "password"}, {"clear", "wipe"}),
    # an insurance claims desk (an audit): a total loss is no sum of money, an insurance policy
    # that a compliance check reads no set of rules
    ("total-loss-handling", {"claim", "payout", "amount", "settlement"}, {"grand", "aggregate"}),
    ("policy-compliance-check", {"policy", "compliance", "cover", "claim"}, {"rules", "terms"}),
    # a pharmacy desk (an audit): to place an order is no venue
    ("refill.place_order", {"refill", "prescription", "order"}, {"venue", "site", "locale"}),
    # an ERP back office (an audit): a credit note is no loyalty point, segregation of duties no
    # tax, a three-way match no route, a goods receipt no proof of purchase, an expense
    # reimbursement no customer refund, an accounting journal no log, an adjustment no setting,
    # a submission no tender, procurement no purchase order
    ("credit_note_create", {"invoice", "customer", "credit"}, {"point", "merit"}),
    ("segregation-of-duties-policy", {"approval", "invoice", "payment"}, {"tax", "excise"}),
    ("three-way-match-procedure", {"invoice", "order", "receipt"}, {"route", "course"}),
    ("goods-receipt-procedure", {"warehouse", "order", "goods"}, {"proof", "slip"}),
    ("expenses.reimburse", {"expense", "employee", "claim"}, {"refund", "repay"}),
    ("gl_post_journal", {"ledger", "entry", "account"}, {"log", "logbook"}),
    ("adjustInventory", {"stock", "delta", "warehouse"}, {"set", "configure"}),
    ("procurement.submit_po", {"order", "vendor"}, {"tender"}),
    ("procurement.create_requisition", {"order", "vendor"}, {"purchase", "acquisition"}),
    # a ryokan concierge (an audit): access to a hotel (the way there) is no permission, special
    # requests (an anniversary, an allergy) no deals, a mode of travel (train, bus) no regime;
    # the tools' texts are Japanese, so their English context is their names' words alone
    ("getAccessInfo", {"get", "access", "info"}, {"permission", "privilege", "clearance"}),
    ("access-reply", {"access", "reply"}, {"permission", "privilege", "clearance"}),
    ("specialRequests", {"special", "requests"}, {"offer", "deal", "bargain"}),
    ("mode", {"train", "bus", "car", "route"}, {"regime"}),
    # a CRM (a recheck): an early-access program is no permission though its tool allows a
    # group in; a billing mode (invoice, card) is no operating mode though its tool updates
    # settings
    ("enroll_early_access", {"enroll", "early", "access", "allow", "group"}, {"permission"}),
    ("billing_mode", {"update", "billing", "settings", "system"}, {"regime", "operating_mode"}),
    # BFCL (a recheck on the real data): a present value is no gift, a stock's price no cost,
    # a bond's coupon no voucher, a discount rate of cash flows no markdown, shareholder equity
    # no security, a jigsaw's pieces no songs, a land area no district, a probability's outcomes
    # no findings, a video game no match, a chess rating no evaluation, a historical event no
    # gathering, adding days to a date no inserting, revenue no income, a public library no
    # shared one, population genetics no inhabitants, caffeine content no text
    ("calculate_present_value", {"cash", "flows", "discount", "rate"}, {"gift", "keepsake"}),
    ("avg_closing_price", {"stock", "closing", "average", "days"}, {"cost", "charge"}),
    ("coupon_payment", {"bond", "annual", "interest", "face"}, {"voucher", "promo"}),
    ("discount_rate", {"cash", "flows", "present", "value"}, {"markdown", "rebate"}),
    ("shareholder_equity", {"net", "income", "return", "shareholder"}, {"security", "share"}),
    ("pieces_count", {"jigsaw", "puzzle", "pieces"}, {"songs", "tunes", "melodies"}),
    ("land_area", {"country", "land", "area", "km"}, {"district", "zone", "region"}),
    ("total_outcomes", {"probability", "event", "outcomes"}, {"findings"}),
    (
        "video_games.get_player_count",
        {"video", "game", "players", "score"},
        {"fixtures", "contests", "matches"},
    ),
    ("chess.rating", {"chess", "player", "rating"}, {"evaluation", "mark"}),
    (
        "european_history.get_events",
        {"history", "european", "century"},
        {"gatherings", "happenings"},
    ),
    ("add_dates", {"date", "days", "add"}, {"insert", "include"}),
    ("total_revenue", {"company", "revenue", "year"}, {"income", "earnings"}),
    ("public_library.find_nearby", {"library", "city", "facilities"}, {"shared", "communal"}),
    (
        "population_genetics.calculate_ne",
        {"genetics", "effective", "population"},
        {"inhabitants", "residents"},
    ),
    ("caffeine_content", {"amount", "caffeine", "mg"}, {"text", "wording"}),
    # a telecom desk (an audit): an outage is reported, not written up; a roaming switch is set,
    # not calibrated; a data bundle is no assortment
    ("report_outage", {"report", "outage", "area", "network"}, {"writeup", "brief", "dossier"}),
    ("set_roaming", {"set", "roaming", "enable", "line"}, {"calibrate"}),
    ("bundle_code", {"bundle", "data", "minutes", "activate"}, {"kit", "assortment"}),
    # a review of the lexicon: words of common APIs, each beside a neighbouring sense it had
    ("top_p", {"model", "sampling", "temperature"}, {"leading", "premier", "foremost"}),
    ("min_price", {"product", "filter"}, {"lowest", "least", "smallest"}),
    ("max_rows", {"query", "sql"}, {"highest", "greatest", "peak"}),
    ("duration_min", {"call", "minutes"}, {"minimum", "lowest"}),
    ("page_token", {"api", "list", "auth"}, {"access", "credential"}),
    ("max_workers", {"parallel", "threads"}, {"employee", "staff", "personnel"}),
    ("node_id", {"graph", "cluster"}, {"server", "backend"}),
    ("job_title", {"employment", "salary"}, {"heading", "caption", "headline"}),
    ("content_type", {"http", "body", "post"}, {"text", "wording", "passage"}),
    ("market_cap", {"stock", "price"}, {"limit", "ceiling"}),
    ("lower_bound", {"range", "number"}, {"ceiling", "limit", "cap"}),
    ("issue_date", {"passport", "invoice"}, {"problem", "defect", "concern"}),
    ("routing_number", {"bank", "account"}, {"escalation", "handoff"}),
    ("private_key", {"ssh", "crypto"}, {"personal", "confidential"}),
    ("span_id", {"trace", "tracing"}, {"distance", "gap"}),
    ("billing_period", {"invoice", "subscription"}, {"duration", "timespan", "interval"}),
    ("interval", {"polling", "seconds"}, {"duration", "period"}),
    ("input_format", {"file", "convert"}, {"output", "representation"}),
    ("charge_id", {"payment", "card"}, {"price", "cost"}),
    ("confirm_booking", {"hotel", "booking"}, {"check", "verify", "validate", "inspect"}),
    ("country", {"address", "shipping"}, {"homeland", "nation"}),
    ("language", {"translate", "speech"}, {"human", "tongue"}),
    ("profile", {"user", "account"}, {"persona", "bio"}),
    ("query", {"sql", "customer", "table"}, {"question", "inquiry"}),
    ("describe_table", {"sql", "database"}, {"explain", "clarify"}),
    ("retry_payment", {"payment"}, {"repeat", "redo"}),
    ("escalate_ticket", {"support"}, {"raise", "elevate", "refer"}),
    ("sale_price", {"product", "discount"}, {"retail"}),
    ("deal_id", {"crm", "pipeline"}, {"offer", "bargain"}),
    ("is_public", {"file", "repository"}, {"shared", "communal"}),
    ("sort_dir", {"list", "order"}, {"directory", "folder"}),
    ("sort_desc", {"list", "order"}, {"description"}),
    # BFCL and a brokerage (audits): a distance travelled, a bird identified, a stroke's width, a
    # random forest, a sports team, a directions service, a price checked, an interest rate, a
    # concert ticket, a song's title, a currency converted, data processed, a to-do manager, a
    # design report, a hotel room, a user's preferences, an average, a card's rank, a share
    # count, an order cancelled, an alert's threshold, a transfer's amount, a store's rating
    ("distance", {"travel", "velocity"}, {"separation", "span"}),
    ("identify_bird", {"species", "bird"}, {"pinpoint", "detect", "recognize"}),
    ("stroke_width", {"polygon", "stroke"}, {"breadth"}),
    ("train_random_forest_classifier", {"model", "classifier"}, {"stochastic", "rand"}),
    ("get_team_score", {"sports", "league"}, {"crew", "squad"}),
    ("map_service", {"directions", "route"}, {"atlas"}),
    ("check_price", {"store", "items"}, {"verify", "validate", "inspect"}),
    ("interest_rate", {"loan", "bank"}, {"yield", "accrual"}),
    ("book_ticket", {"concert", "booking", "seat"}, {"stub", "arrangement", "e"}),
    ("song_title", {"lyrics", "song"}, {"heading", "headline"}),
    ("convert_currency", {"currency", "exchange"}, {"remap", "recast", "transform"}),
    ("process_data", {"data"}, {"treat"}),
    ("todo_manager", {"todo"}, {"supervisor", "overseer"}),
    ("generate_report", {"analysis", "design"}, {"dossier", "brief", "writeup"}),
    ("room_type", {"hotel"}, {"chamber", "guestroom"}),
    ("user_preferences", {"user", "settings"}, {"settings", "choices"}),
    ("average", {"numbers"}, {"averaged", "mean"}),
    ("rank", {"card", "deck"}, {"ranking", "standing"}),
    ("quantity", {"order", "shares"}, {"quant"}),
    ("cancel_order", {"order"}, {"annul", "rescind", "abort"}),
    ("threshold", {"alert", "price"}, {"boundary"}),
    ("amount", {"transfer", "account"}, {"figure", "sum"}),
    ("rating", {"store", "product"}, {"mark"}),
    # a food-delivery desk (an audit): its diner is the customer, a delivery tracked is not
    # tailed, a late arrival no dispatch delay, and a refund issued is not distributed
    ("get_restaurant", {"restaurant", "food", "order"}, {"diner"}),
    ("track_delivery", {"order", "delivery", "rider"}, {"tail", "trace", "dispatch", "shipping"}),
    ("issue_refund", {"refund", "order"}, {"distribute", "grant"}),
    # an applicant-tracking system (an audit): a job application is no app, money no tender
    ("application_id", {"candidate", "job"}, {"app", "appl"}),
    ("currency", {"offer", "salary"}, {"legal", "tender"}),
    # a home-automation app (an audit): a thermostat set to 21 is not calibrated, a light's
    # colour no shade (a blind) nor hue (one part of it), a switched-on device not operational
    ("set_thermostat", {"thermostat", "temperature", "device"}, {"calibrate"}),
    ("color", {"light", "brightness", "kelvin"}, {"shade", "tint", "hue"}),
    ("enabled", {"schedule", "device", "automation"}, {"operational"}),
    # a hotel concierge (an audit): a guest's complaint is no sales objection, a local guide
    # who shows the way no primer
    ("complaint", {"guest", "hotel", "handling"}, {"objection"}),
    ("local_guide", {"local", "guide", "reply", "sightseeing"}, {"primer", "handbook"}),
    # a recheck in a bank, a CI agent and a meal planner: a food guide who walks the user
    # through a market, a card lock set on a phone, a build's estimated time, standing orders
    # looked over, a cheque deposited, a city, a contact's email, a watcher's notification,
    # change management, and a complaint beside an issue (both became "concern")
    ("find_food_guide", {"local", "food", "user", "market", "walks"}, {"handbook", "primer"}),
    ("set_card_lock", {"card", "lock", "device", "state"}, {"control", "configure"}),
    ("estimate_build_time", {"pipeline", "build", "minutes"}, {"anticipate", "assembly"}),
    ("review_standing_orders", {"standing", "orders", "list"}, {"critique", "appraise"}),
    ("deposit_cheque", {"cheque", "account"}, {"bank", "funds"}),
    ("city", {"weather", "forecast"}, {"town", "metro", "municipality"}),
    ("contact_email", {"customer", "contact"}, {"electronic", "letter"}),
    ("enabled_notifications", {"issue", "watchers"}, {"bulletin", "bulletins"}),
    ("change_management", {"change", "approval"}, {"triage", "processing"}),
    ("file_complaint", {"app", "issue"}, {"concern"}),
]


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize(("name", "context", "not_synonyms"), NEIGHBOURS_NOT_SYNONYMS)
def test_the_tables_offer_no_neighbouring_sense_for_a_word(name, context, not_synonyms, split):
    assert not _offered(name, context, split) & not_synonyms


@pytest.mark.parametrize(
    ("name", "context", "split", "synonym"),
    [  # where the word has the sense its group names, the group still offers it
        ("loan_amount", {"bank", "interest"}, "train", "lending"),
        ("departure_time", {"flight", "airport"}, "train", "takeoff"),
        ("access_token", {"oauth", "login"}, "heldout", "credential"),
        ("player_name", {"league", "team"}, "train", "athlete"),
        ("order_status", {"order", "shipping"}, "train", "current"),
        ("tag_ids", {"post"}, "train", "label"),
        ("redeem_points", {"loyalty", "reward"}, "train", "claim"),
        ("run_script", {"python", "shell"}, "train", "program"),
        ("method_name", {"python", "callable"}, "train", "function"),
        ("origin", {"flight", "airport"}, "heldout", "embarkation"),
        ("book_flight", {"flight", "seat"}, "heldout", "secure"),
        ("list_hooks", {"git", "repository"}, "heldout", "callbacks"),
        ("branch_name", {"git", "commit"}, "train", "dev"),
        ("schedule_meeting", {"calendar"}, "heldout", "huddle"),
        ("get_invoice", {"payment"}, "heldout", "billing"),
        ("privacy_policy", {"privacy", "data"}, "train", "rules"),
        ("order_status", {"order"}, "heldout", "present"),
        ("connect_device", {"bluetooth"}, "heldout", "pair"),
        ("flight_details", {"flight"}, "heldout", "particulars"),
        ("get_records", {"database", "table"}, "train", "entries"),
        ("item_id", {"shop", "cart"}, "heldout", "merchandise"),
        ("product_id", {"product"}, "train", "item"),
        ("supplier_contact", {"supplier", "person", "name"}, "train", "person"),
        ("import_duty", {"customs", "import", "goods"}, "train", "customs"),
        ("sales_tax", {"order", "price"}, "train", "taxation"),
        ("order_total", {"order", "price"}, "train", "grand"),
        ("ticket_id", {"support", "customer"}, "heldout", "incident"),
        ("apply_refund", {"refund", "order"}, "train", "request"),
        ("apply_coupon", {"coupon", "cart"}, "train", "use"),
        ("report_issue", {"bug", "app"}, "train", "problem"),
        ("find_place", {"map", "nearby"}, "train", "venue"),
        ("grant_access", {"role", "permission", "user"}, "heldout", "clearance"),
        ("revoke_access", {"admin", "rights"}, "train", "permission"),
        ("display_mode", {"device", "screen", "dark"}, "heldout", "regime"),
    ],
)
def test_the_tables_still_offer_a_words_synonyms_in_its_sense(name, context, split, synonym):
    assert synonym in _offered(name, context, split)


# ---- number: a plural name takes its replacement's plural once ---------------------------------


@pytest.mark.parametrize(
    ("word", "many"),
    [
        ("detail", "details"),
        ("details", "details"),  # plural already
        ("information", "information"),  # mass nouns have no plural
        ("data", "data"),
        ("feedback", "feedback"),
        ("particulars", "particulars"),  # nor have pluralia tantum another one
        ("specifics", "specifics"),
        ("goods", "goods"),
        ("statistics", "statistics"),
        ("category", "categories"),
        ("synopsis", "synopses"),
        ("status", "statuses"),
        ("leaf", "leaves"),
        ("corpus", "corpora"),
        ("atlas", "atlases"),
        ("proof_of_purchase", "proofs_of_purchase"),  # a phrase's head
        ("small_talk", "small_talk"),
    ],
)
def test_the_plural_of_a_word(word, many):
    assert plural(word) == many


def test_no_word_of_the_tables_is_made_plural_twice():
    members = {m for g in lexicon().groups if g.pos == "noun" for m in g.train + g.heldout} | {
        m for g in abbreviation_groups() for m in g["train"] + g["heldout"]
    }
    for member in members:
        many = plural(member)
        assert plural(many) == many, member
        if member in UNCOUNTABLE or is_plural(member.split("_")[-1]):
            assert many == member


@pytest.mark.parametrize(
    ("phrase", "split", "context", "expected"),
    [
        (("details",), "train", set(), {("information",)}),
        (("details",), "heldout", set(), {("particulars",), ("specifics",)}),
        (("infos",), "train", set(), {("information",), ("details",)}),
        (("summaries",), "heldout", set(), {("synopses",), ("recaps",)}),
        (("images",), "heldout", {"photo"}, {("pictures",), ("pics",)}),
        (("receipts",), "train", {"purchase"}, {("proofs", "of", "purchase")}),
        (("receipts",), "train", {"warehouse", "goods"}, set()),  # what arrived: no purchase
        (("priors",), "train", set(), set()),  # an adjective's plural is a noun of its own
        (("alerts",), "train", set(), set()),  # alerts are things, no verb ("notifies")
    ],
)
def test_a_plural_name_word_takes_its_replacements_in_the_plural_once(
    phrase, split, context, expected
):
    from hsa.transforms._names import replacements

    assert set(replacements(phrase, split, context, leading=True)) == expected


# Tools of an IT helpdesk, a bank, an insurer, a loyalty scheme and a travel agent, as the name
# transforms see them (name, description, parameter schemas), and the words no new name of a tool
# or of its parameters may say: neighbouring senses of their words.
HELPDESK_BANK_TRAVEL = [
    ("schedule_callback", "Schedule a call-back to the caller's phone.", {"phone_number": {}}, {"hook", "interceptor"}),
    ("expire_sessions", "Sign the user out everywhere: expire all login sessions.", {"user_id": {}}, {"meeting", "conference", "huddle"}),
    ("reset_password", "Reset the password; a one-time code is sent.", {"method": {"enum": ["sms", "email"]}}, {"function", "procedure", "subroutine"}),
    ("create_mail_rule", "Create an inbox rule.", {"condition": {"description": "A predicate."}}, {"status", "current", "present", "state"}),
    ("get_statement", "Get the monthly statement of a bank account.", {"iban": {}}, {"invoice", "bill", "billing"}),
    ("claim", "File an insurance claim under a policy.", {"policy_number": {}}, {"redeem", "encash", "rules", "regulations", "terms"}),
    ("join_program", "Enroll in the loyalty program.", {"customer_id": {}}, {"script", "routine", "connect", "attach", "pair"}),
    ("search_flights", "Search flights between airports.", {"origin": {}, "destination": {}}, {"provenance"}),
    ("book", "Book a seat on a flight.", {"flight_id": {}}, {"hold"}),
    ("book_hotel", "Book a hotel room for some nights.", {"room_type": {"enum": ["single", "double", "suite"]}}, {"suite"}),
    ("get_flight_details", "Get the details of a flight.", {"booking_details": {}}, set()),
    ("kb.answerReply", "Answer with a knowledge-base reply.", {"text": {}}, set()),
    ("check_iban", "Check that an IBAN is valid.", {"amount_check": {}}, set()),
]  # fmt: skip


def _described_episode(tools) -> Episode:
    return Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "h",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": name,
                            "description": description,
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    p: {"type": "string", **schema} for p, schema in params.items()
                                },
                            },
                        },
                    }
                    for name, description, params, _ in tools
                ],
            },
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"calls": [{"name": tools[0][0], "arguments": {}}]},
        }
    )


def _malformed_plural(word: str) -> bool:
    """A plural made of a plural word of the tables (``particularses``) or of a mass noun
    (``informations``)."""
    words = {w for g in lexicon().groups for m in g.train + g.heldout for w in m.split("_")}
    return (word.endswith("es") and word[:-2] in words and is_plural(word[:-2])) or (
        word.endswith("s") and word[:-1] in UNCOUNTABLE
    )


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize("name", ["tool_name_paraphrase", "parameter_name_paraphrase"])
def test_renamed_tools_of_other_domains_keep_their_words_sense_number_and_say_nothing_twice(
    name, split
):
    """Through the transforms (the words of a tool's text tell a word's sense): no new name of a
    tool or of its parameters says a neighbouring sense of a word, makes a plural plural twice
    (``AcquireAirLegParticularses``), or says a word twice where the old name said it once
    (``kb.replyReply`` of ``kb.answerReply``)."""
    episode = _described_episode(HELPDESK_BANK_TRAVEL)
    never = {tool: words for tool, _, _, words in HELPDESK_BANK_TRAVEL}
    never |= {p: words for _, _, params, words in HELPDESK_BANK_TRAVEL for p in params}
    renamed = 0
    for seed in range(12):
        for variant in augment_episode(recipe(name, split, seed), episode):
            assert isinstance(variant, Variant), str(variant)
            renames = dict(variant.mapping.tools)
            for params in variant.mapping.parameters.values():
                renames |= params
            for old, new in renames.items():
                words = [w.lower() for w in name_words(new)]
                assert not set(words) & never[old], (old, new)
                assert not any(_malformed_plural(w) for w in words), (old, new)
                assert all(n <= o for n, o in zip(echoes(new), echoes(old), strict=True)), (
                    old,
                    new,
                )
                renamed += meaning(new) != meaning(old)
    assert renamed  # the transforms still give these tools other words


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_names_words_move_only_around_a_verb_that_names_its_action(split):
    """Audits of a hotel and a home-automation harness: ``set_lock`` had become ``lock_set``
    (a lock's hardware), skill ``schedule-builder`` ``builder-schedule`` (a builder's
    schedule) and ``ARRANGE_BUILDER``, ``rate-reply`` ``reply-rate`` (a response rate). A
    leading verb moves to a name's end only where its bare form names the action after its
    object (``order_lookup``), a last word never moves first, and a skill id's first word is a
    noun, never a verb to reword. No move takes a preposition first (``to_card_refund``)."""
    tools = [
        "set_lock",
        "schedule_meeting",
        "copy_document",
        "find_store",
        "send_zorblat",
        "refund_to_card",
    ]
    skills = ["schedule-builder", "rate-reply", "search-helper", "refund-policy"]
    episode = Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "h",
                "tools": [
                    {"type": "function", "function": {"name": n, "description": "Does it."}}
                    for n in tools
                ],
                "skills": [
                    {"id": i, "description": "How to answer.", "content": "Answer."} for i in skills
                ],
            },
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"calls": [{"name": "set_lock", "arguments": {}}]},
        }
    )
    action_nouns = lexicon().action_nouns
    verbs = lexicon().verbs
    seen = 0
    for name in ("tool_name_paraphrase", "skill_id_synonym"):
        for seed in range(16):
            for variant in augment_episode(recipe(name, split, seed), episode):
                assert isinstance(variant, Variant), str(variant)
                renames = {**variant.mapping.tools, **variant.mapping.skills}
                for old, new in renames.items():
                    before = [w.lower() for w in name_words(old)]
                    after = [w.lower() for w in name_words(new)]
                    seen += 1
                    if before[0] not in action_nouns:
                        assert after[-1] != before[0], (old, new)
                    assert after[0] != before[-1], (old, new)
                    assert after[0] not in {"to", "for", "of"}, (old, new)  # refund_to_card
                    if old in skills:  # no verb's synonym put first
                        assert after[0] == before[0] or after[0] not in verbs, (old, new)
    assert seen


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_a_hook_name_says_no_word_twice(split):
    """A naming pattern's word the hook's name has already, or a synonym of it, is not added
    again: ``check_iban`` is no ``check_iban_check`` nor ``validate_check_iban``."""
    episode = Episode.from_dict(
        {
            "id": "e",
            "harness": {
                "name": "h",
                "tools": [{"type": "function", "function": {"name": "transfer"}}],
                "hooks": [
                    {"name": n, "event": "reply", "function": "f", "description": "Checks."}
                    for n in ("check_iban", "limit_check", "validate_amount", "amount_validator")
                ],
                "hooks_source": "def f(payload, config):\n    return {'ok': True}\n",
            },
            "messages": [{"role": "user", "content": "hi"}],
            "gold": {"calls": [{"name": "transfer", "arguments": {}}]},
        }
    )
    for seed in range(12):
        for variant in augment_episode(recipe("hook_implementation_swap", split, seed), episode):
            assert isinstance(variant, Variant), str(variant)
            for old, new in variant.mapping.hooks.items():
                assert all(n <= o for n, o in zip(echoes(new), echoes(old), strict=True)), (
                    old,
                    new,
                )


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_in_a_dotted_name_only_the_last_segment_leads_with_a_verb(split):
    """``alerts.ack`` acknowledges alerts: its namespace is what the action acts on, so a verb
    reading of ``alerts`` (``notifies``) is no paraphrase; the action itself still is one."""
    from hsa.transforms._names import name_words, slots

    def replaced(name: str) -> dict[int, set[tuple[str, ...]]]:
        segments = [name_words(s) for s in name.split(".")]
        out: dict[int, set[tuple[str, ...]]] = {}
        for slot in slots(segments, split, set()):
            out.setdefault(slot.segment, set()).add(slot.key)
        return out

    assert "alert" in lexicon().verbs  # else this test would say nothing
    assert 0 not in replaced("alerts.ack")
    assert ("alert",) in replaced("alert_team")[0]  # undotted: the leading word acts
    assert ("get",) in replaced("weather.get_forecast")[1]


def test_the_tables_name_no_single_domain():
    # Words of the shipped example's domain are there only as any dictionary has them: no
    # group is about live streaming, and the namespaces are general.
    from hsa.transforms.skill_ids import SKILL_NAMESPACES

    members = {m for g in lexicon().groups for m in g.train + g.heldout}
    assert not {"livestream", "streamer", "live_room"} & members
    assert not {"live", "host", "shop", "store", "mall", "studio"} & (
        set(SKILL_NAMESPACES["train"]) | set(SKILL_NAMESPACES["heldout"])
    )


# ---- no rename takes another identifier's meaning ---------------------------------------------


def _episode(tools: dict[str, list[str]]) -> Episode:
    """An episode of one greeting under tools of string parameters, by name, without
    descriptions."""
    return _described_episode(
        [(name, "", {p: {} for p in params}, None) for name, params in tools.items()]
    )


def test_verification_rejects_a_rename_onto_another_parameters_meaning():
    episode = _episode({"get_items": ["item_ids"], "get_product": ["product_id"]})
    # item_ids -> product_ids: every identifier still resolves, but for a reader the call now
    # names products, which product_id already means.
    mapping = Mapping(parameters={"get_items": {"item_ids": "product_ids"}})
    with pytest.raises(VerificationFailed) as caught:
        verify_variant(episode, rename_episode(episode, mapping), mapping)
    assert caught.value.check == "meaning_taken"
    assert "product_id" in str(caught.value)
    # Its own meaning in other words (an abbreviation expanded, another convention) is fine.
    for new in ("item_identifiers", "itemIds"):
        mapping = Mapping(parameters={"get_items": {"item_ids": new}})
        verify_variant(episode, rename_episode(episode, mapping), mapping)


def test_verification_rejects_a_swap_and_a_rename_onto_a_new_name():
    episode = _episode({"get_item": [], "get_product": [], "list_users": []})
    for renames in (
        {"get_item": "get_product", "get_product": "get_item"},  # a swap
        {"get_item": "fetch_goods", "list_users": "fetch_goods_2", "get_product": "goods_fetch"},
    ):  # onto another's new name
        mapping = Mapping(tools=renames)
        with pytest.raises(VerificationFailed) as caught:
            verify_variant(episode, rename_episode(episode, mapping), mapping)
        assert caught.value.check == "meaning_taken"


def recipe(name: str, split: str, seed: int) -> Recipe:
    return Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": name,
            "seed": seed,
            "variants_per_episode": 2,
            "keep_original": False,
            "pipeline": [{name: {"split": split}}],
        }
    )


@pytest.mark.parametrize("name", RENAMERS)
@given(
    row=clashing_episode_dicts(),
    seed=st.integers(0, 2**32),
    split=st.sampled_from(["train", "heldout"]),
)
def test_no_rename_takes_another_identifiers_meaning(name, row, seed, split):
    """Over harnesses whose names are synonyms, abbreviations and plurals of each other, every
    renaming transform keeps every variant (verification, meaning check included, passes) and
    no new name says what another identifier of its kind says, before or after renaming."""
    episode = Episode.from_dict(row)
    for variant in augment_episode(recipe(name, split, seed), episode):
        assert isinstance(variant, Variant), str(variant)
        for kind, identifiers in identifiers_by_kind(episode.harness, variant.mapping).items():
            for old, news in identifiers.items():
                for new in news - {old}:
                    if meaning(new) == meaning(old):
                        continue
                    others = {
                        n
                        for other, names in identifiers.items()
                        if meaning(other) != meaning(old)
                        for n in names | {other}
                    }
                    assert meaning(new) not in {meaning(n) for n in others}, (kind, old, new)


@given(row=clashing_episode_dicts(), seed=st.integers(0, 2**32))
def test_one_naming_convention_per_variant(row, seed):
    """A variant renamed by several transforms writes every renamed name in one convention."""
    pipeline = [
        {n: {"split": "train"}}
        for n in (
            "skill_id_synonym",
            "tool_name_paraphrase",
            "parameter_name_paraphrase",
            "hook_implementation_swap",
        )
    ]
    chained = Recipe.from_dict(
        {
            "recipe_version": 1,
            "name": "all",
            "seed": seed,
            "variants_per_episode": 2,
            "keep_original": False,
            "pipeline": pipeline,
        }
    )
    episode = Episode.from_dict(row)
    for variant in augment_episode(chained, episode):
        assert isinstance(variant, Variant), str(variant)
        convention = variant.episode.harness.prompt.options["naming"]
        renamed = [new for kind in variant.mapping.renamed().values() for new in kind.values()]
        assert convention in shared_conventions(renamed), renamed
        harness = variant.episode.harness
        for names in (
            harness.tool_names,
            harness.skill_ids,
            [h.name for h in harness.hooks],
            [p for t in harness.tools for p in t.properties],
        ):
            assert convention in shared_conventions(names), names


def test_mixing_conventions_is_an_option():
    episode = _episode(
        {
            f"get_{w}": []
            for w in ("item", "user", "flight", "price", "date", "trip", "cost", "client")
        }
    )
    seen = set()
    for seed in range(6):
        out = augment_episode(
            Recipe.from_dict(
                {
                    "recipe_version": 1,
                    "name": "mixed",
                    "seed": seed,
                    "variants_per_episode": 1,
                    "keep_original": False,
                    "pipeline": [{"tool_name_paraphrase": {"naming": "mixed"}}],
                }
            ),
            episode,
        )[0]
        seen |= {convention_of([n]) for n in out.episode.harness.tool_names}
        assert "naming" not in out.episode.harness.prompt.options
    assert len(seen) > 1


def test_a_plain_word_glossing_a_cjk_word_in_brackets_is_the_parameter():
    """A Korean shop's skill glosses its words with the parameters, "송장번호(invoice_no)와
    택배사(carrier)가": the identifier moved, the plain word did not, in prose that writes
    English words of its own (code-mixed, where a Latin word beside Hangul is the prose's). In
    ASCII brackets glued to the script, a word is a gloss: the parameter."""
    rewrite = parameter_mentions({"carrier": "courier"}, beside_other_scripts=False)
    assert rewrite("택배사(carrier)가 필요합니다.") == "택배사(courier)가 필요합니다."
    assert rewrite("The carrier (UPS) is fine.") == "The carrier (UPS) is fine."
