"""LEAF forecasting targets (LEAF App. C.2) and the task settings of §4.1 / App. C.1.

Domains: ``large_cap`` (30 equities, C.2.1, plus the 20 other stocks of the recorded SEER case,
:data:`RECORDED_CASE_STOCKS`), ``mid_cap`` (40 equities, C.2.1), ``commodity`` (10 futures,
C.2.2), ``weather`` (10 US cities with coordinates, C.2.3), ``electricity`` (3 load areas, C.2.4) and
``event`` (prediction-market questions in three categories, C.2.5). ``target_id`` is the ticker for
markets, a snake-case city / area name otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DOMAINS = ("large_cap", "mid_cap", "commodity", "weather", "electricity", "event")
EVENT_CATEGORIES = ("economy_business", "politics_world", "tech_ai")

# Trend classes (App. C.1), ordered from the lowest to the highest change.
CLASSES_5 = ("Strong Down", "Down", "Neutral", "Up", "Strong Up")
CLASSES_3 = ("Down", "Neutral", "Up")


@dataclass(frozen=True)
class Target:
    target_id: str
    domain: str
    name: str
    group: str  # sector (markets), region (weather), ISO (electricity)
    symbol: str | None = None  # Yahoo ticker (markets)
    latitude: float | None = None
    longitude: float | None = None
    timezone: str = "America/New_York"
    unit: str = "USD"
    source_ids: dict[str, str] = field(default_factory=dict)  # per-provider ids (EIA-930, gridstatus, ...)


def _equities(domain: str, groups: dict[str, list[tuple[str, str]]]) -> list[Target]:
    return [Target(t, domain, n, g, symbol=t) for g, items in groups.items() for t, n in items]


# C.2.1, in the paper's order.
LARGE_CAPS = _equities(
    "large_cap",
    {
        "Tech Giants": [
            ("META", "Meta"),
            ("AAPL", "Apple"),
            ("NVDA", "NVIDIA"),
            ("MSFT", "Microsoft"),
            ("GOOGL", "Alphabet"),
            ("AMZN", "Amazon"),
            ("TSLA", "Tesla"),
        ],
        "Semiconductors": [
            ("AMD", "AMD"),
            ("INTC", "Intel"),
            ("TSM", "TSMC"),
            ("AVGO", "Broadcom"),
            ("QCOM", "Qualcomm"),
        ],
        "Software & Media": [
            ("NFLX", "Netflix"),
            ("DIS", "Disney"),
            ("ADBE", "Adobe"),
            ("CRM", "Salesforce"),
            ("ORCL", "Oracle"),
        ],
        "Finance & Payments": [
            ("JPM", "JPMorgan Chase"),
            ("BAC", "Bank of America"),
            ("V", "Visa"),
            ("MA", "Mastercard"),
        ],
        "Consumer & Retail": [
            ("WMT", "Walmart"),
            ("COST", "Costco"),
            ("KO", "Coca-Cola"),
            ("PEP", "PepsiCo"),
            ("PG", "Procter & Gamble"),
        ],
        "Healthcare": [
            ("JNJ", "Johnson & Johnson"),
            ("PFE", "Pfizer"),
            ("LLY", "Eli Lilly"),
            ("UNH", "UnitedHealth Group"),
        ],
    },
)

MID_CAPS = _equities(
    "mid_cap",
    {
        "Cloud, AI & Data Analytics": [
            ("SNOW", "Snowflake"),
            ("MDB", "MongoDB"),
            ("DDOG", "Datadog"),
            ("PLTR", "Palantir"),
            ("SMCI", "Super Micro Computer"),
            ("VRT", "Vertiv"),
        ],
        "Software, Security & Interactive Media": [
            ("NET", "Cloudflare"),
            ("ZS", "Zscaler"),
            ("S", "SentinelOne"),
            ("APP", "AppLovin"),
            ("DUOL", "Duolingo"),
            ("RBLX", "Roblox"),
            ("U", "Unity"),
            ("RDDT", "Reddit"),
            ("PATH", "UiPath"),
        ],
        "Semiconductors & Industrial Automation": [
            ("MRVL", "Marvell"),
            ("ALAB", "Astera Labs"),
            ("COHR", "Coherent"),
            ("SYM", "Symbotic"),
        ],
        "Fintech & Digital Assets": [
            ("HOOD", "Robinhood"),
            ("SOFI", "SoFi"),
            ("AFRM", "Affirm"),
            ("COIN", "Coinbase"),
            ("MSTR", "MicroStrategy"),
            ("TOST", "Toast"),
        ],
        "Consumer, E-commerce & Lifestyle": [
            ("CVNA", "Carvana"),
            ("CPNG", "Coupang"),
            ("SE", "Sea Limited"),
            ("ELF", "e.l.f. Beauty"),
            ("ONON", "On Holding"),
            ("CAVA", "CAVA Group"),
            ("CELH", "Celsius"),
            ("DKNG", "DraftKings"),
        ],
        "Frontier Tech, Biotech & Energy": [
            ("ASTS", "AST SpaceMobile"),
            ("RKLB", "Rocket Lab"),
            ("JOBY", "Joby Aviation"),
            ("RIVN", "Rivian"),
            ("CRSP", "CRISPR Therapeutics"),
            ("VKTX", "Viking Therapeutics"),
            ("CEG", "Constellation Energy"),
        ],
    },
)

# C.2.2; units are the CME quote units Yahoo reports.
COMMODITIES = [
    Target("CL=F", "commodity", "Crude Oil WTI", "Energy", symbol="CL=F", unit="USD/bbl"),
    Target("BZ=F", "commodity", "Brent Crude", "Energy", symbol="BZ=F", unit="USD/bbl"),
    Target("NG=F", "commodity", "Natural Gas", "Energy", symbol="NG=F", unit="USD/MMBtu"),
    Target("GC=F", "commodity", "Gold", "Metals", symbol="GC=F", unit="USD/ozt"),
    Target("SI=F", "commodity", "Silver", "Metals", symbol="SI=F", unit="USD/ozt"),
    Target("HG=F", "commodity", "Copper", "Metals", symbol="HG=F", unit="USD/lb"),
    Target("ZC=F", "commodity", "Corn", "Agriculture", symbol="ZC=F", unit="USc/bu"),
    Target("ZS=F", "commodity", "Soybeans", "Agriculture", symbol="ZS=F", unit="USc/bu"),
    Target("ZW=F", "commodity", "Wheat", "Agriculture", symbol="ZW=F", unit="USc/bu"),
    Target("KC=F", "commodity", "Coffee", "Agriculture", symbol="KC=F", unit="USc/lb"),
]

# C.2.3: the paper's coordinates; time zones for local-day aggregation.
CITIES = [
    Target(
        "chicago",
        "weather",
        "Chicago",
        "Midwest",
        latitude=41.8781,
        longitude=-87.6298,
        timezone="America/Chicago",
        unit="degC",
    ),
    Target(
        "new_york",
        "weather",
        "New York",
        "Northeast",
        latitude=40.7128,
        longitude=-74.0060,
        timezone="America/New_York",
        unit="degC",
    ),
    Target(
        "san_francisco",
        "weather",
        "San Francisco",
        "West",
        latitude=37.7749,
        longitude=-122.4194,
        timezone="America/Los_Angeles",
        unit="degC",
    ),
    Target(
        "washington_dc",
        "weather",
        "Washington D.C.",
        "Northeast",
        latitude=38.9072,
        longitude=-77.0369,
        timezone="America/New_York",
        unit="degC",
    ),
    Target(
        "miami",
        "weather",
        "Miami",
        "South",
        latitude=25.7617,
        longitude=-80.1918,
        timezone="America/New_York",
        unit="degC",
    ),
    Target(
        "los_angeles",
        "weather",
        "Los Angeles",
        "West",
        latitude=34.0522,
        longitude=-118.2437,
        timezone="America/Los_Angeles",
        unit="degC",
    ),
    Target(
        "houston",
        "weather",
        "Houston",
        "South",
        latitude=29.7604,
        longitude=-95.3698,
        timezone="America/Chicago",
        unit="degC",
    ),
    Target(
        "seattle",
        "weather",
        "Seattle",
        "West",
        latitude=47.6062,
        longitude=-122.3321,
        timezone="America/Los_Angeles",
        unit="degC",
    ),
    Target(
        "boston",
        "weather",
        "Boston",
        "Northeast",
        latitude=42.3601,
        longitude=-71.0589,
        timezone="America/New_York",
        unit="degC",
    ),
    Target(
        "denver",
        "weather",
        "Denver",
        "Mountain",
        latitude=39.7392,
        longitude=-104.9903,
        timezone="America/Denver",
        unit="degC",
    ),
]

# C.2.4: the three metropolitan load areas. ``eia930`` is the EIA-930 subregion (Ruggles et al. cleaned
# files), ``gridstatus`` the (ISO class, load-zone column) pair of gridstatus' 5-minute zonal load.
ELECTRICITY_AREAS = [
    Target(
        "new_york_city",
        "electricity",
        "New York City (NYISO Zone J)",
        "NYISO",
        timezone="America/New_York",
        unit="MW",
        source_ids={"eia930": "NYIS-ZONJ", "gridstatus_iso": "NYISO", "gridstatus_zone": "N.Y.C."},
    ),
    Target(
        "boston",
        "electricity",
        "Boston (ISO-NE NEMA, load zone 4008)",
        "ISONE",
        timezone="America/New_York",
        unit="MW",
        source_ids={"eia930": "ISNE-4008", "gridstatus_iso": "ISONE", "gridstatus_zone": ".Z.NEMASSBOST"},
    ),
    Target(
        "san_francisco",
        "electricity",
        "San Francisco (CAISO PG&E area)",
        "CAISO",
        timezone="America/Los_Angeles",
        unit="MW",
        source_ids={"eia930": "CISO-PGAE", "gridstatus_iso": "CAISO", "gridstatus_zone": "PGE"},
    ),
]

# The recorded SEER case Stock-Basket50 (cutoff 2026-03-25; leaf/events/seer/PROVENANCE.md): its 50 large
# caps in the file's order. 30 are App. C.2.1's; the other 20 are large caps too (domain ``large_cap``)
# and get prices and tasks only at the case's cutoff (``pipeline.Spans.case_days``), so every stock of the
# recorded events has its with-events bundles.
SEER_CASE_DAY = "2026-03-25"
SEER_BASKET = (
    "META AAPL MSFT GOOGL AMZN TSLA NFLX DIS ADBE CRM ORCL UBER IBM NVDA AMD INTC TSM AVGO QCOM TXN AMAT MU "
    "LRCX JPM BAC V MA BRK-B WFC MS GS WMT COST KO PEP PG HD MCD JNJ PFE LLY UNH ABBV MRK AMGN ISRG GE XOM "
    "CVX LIN"
).split()
RECORDED_CASE_STOCKS = _equities(
    "large_cap",
    {
        "SEER Stock-Basket50 (beyond App. C.2.1)": [
            ("UBER", "Uber"),
            ("IBM", "IBM"),
            ("TXN", "Texas Instruments"),
            ("AMAT", "Applied Materials"),
            ("MU", "Micron"),
            ("LRCX", "Lam Research"),
            ("BRK-B", "Berkshire Hathaway"),
            ("WFC", "Wells Fargo"),
            ("MS", "Morgan Stanley"),
            ("GS", "Goldman Sachs"),
            ("HD", "Home Depot"),
            ("MCD", "McDonald's"),
            ("ABBV", "AbbVie"),
            ("MRK", "Merck"),
            ("AMGN", "Amgen"),
            ("ISRG", "Intuitive Surgical"),
            ("GE", "GE Aerospace"),
            ("XOM", "Exxon Mobil"),
            ("CVX", "Chevron"),
            ("LIN", "Linde"),
        ]
    },
)

ALL_TARGETS: list[Target] = [
    *LARGE_CAPS,
    *MID_CAPS,
    *COMMODITIES,
    *CITIES,
    *ELECTRICITY_AREAS,
    *RECORDED_CASE_STOCKS,
]


def targets(domain: str) -> list[Target]:
    """The catalog targets of one domain (raises :class:`KeyError` for an unknown domain)."""
    if domain not in DOMAINS:
        raise KeyError(f"unknown domain {domain!r}; known: {DOMAINS}")
    return [t for t in ALL_TARGETS if t.domain == domain]


def get_target(domain: str, target_id: str) -> Target:
    for t in targets(domain):
        if t.target_id == target_id:
            return t
    raise KeyError(f"no {domain} target {target_id!r}")


# ------------------------------------------------------------------------------------------------
# Task settings (§4.1 and App. C.1)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrendThresholds:
    """Neutral band ``|change| <= neutral`` and strong band ``|change| > strong`` (App. C.1, Table 6).

    Market thresholds are fractions of the rate of change; weather in degC; electricity in MW."""

    neutral: float
    strong: float


TREND_THRESHOLDS: dict[str, TrendThresholds] = {
    "large_cap": TrendThresholds(0.005, 0.02),
    "commodity": TrendThresholds(0.005, 0.02),
    "mid_cap": TrendThresholds(0.05, 0.15),
    "weather": TrendThresholds(1.5, 3.0),
    "electricity": TrendThresholds(400.0, 1000.0),
}

LOOKBACK_DAYS = 14  # §4.1: 14-day look-back for time series and short-term trends
SERIES_HORIZONS_DAYS = (3, 7)  # §4.1
LARGE_CAP_EXTRA_TREND_HORIZONS_DAYS = (1, 2)  # §4.1: large caps also 1 and 2 days
MID_CAP_HORIZONS_MONTHS = (3, 6)  # §4.1: mid caps 3 and 6 months with 3 months of history
MID_CAP_LOOKBACK_MONTHS = 3
CUTOFF_STEP_DAYS = 2  # forecasting cutoffs every other calendar day (the authors' GAP_DAY = 2)
EVENT_CUTOFF_FRACTIONS = (1.0, 0.8, 0.6, 0.4, 0.2, 0.1)  # §4.1, share of time to resolution left

# §4.1 sample counts (paper) per domain, horizon label and task family, for side-by-side reports.
PAPER_SAMPLE_COUNTS: dict[tuple[str, str], int] = {
    ("commodity", "3d"): 340,
    ("commodity", "7d"): 320,
    ("large_cap", "3d"): 1020,
    ("large_cap", "7d"): 960,
    ("large_cap", "1d"): 1050,
    ("large_cap", "2d"): 1020,
    ("electricity", "3d"): 156,
    ("electricity", "7d"): 150,
    ("weather", "3d"): 530,
    ("weather", "7d"): 510,
    ("mid_cap", "3mo"): 480,
    ("mid_cap", "6mo"): 360,
}
