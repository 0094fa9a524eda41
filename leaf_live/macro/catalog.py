"""The 16 LiveMacroEval indicators.

Sources: LiveMacroEval §3.3 (themes), App. C (agencies, release calendar), App. D Table 2 (title, unit,
transformation, seasonal adjustment, scale guardrail, source label, prompt group), App. I (FRED-MD/QD
transform codes -> differencing order), Table 9 (reference beta and SE, x1e-4 log-return per
standardized surprise). Ids match the released LiveMacroEval data (``field_id``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import time

THEMES = ("supply_production", "demand_inflation", "labor_market", "housing")
PROMPT_GROUPS = ("output_core", "demand_sectoral")


@dataclass(frozen=True)
class Guardrail:
    """Order-of-magnitude check in the reporting unit (Table 2 'scale guardrail').

    A value ``v`` passes when ``lo <= v <= hi``. ``text`` is the wording shown to the agent.
    """

    lo: float
    hi: float
    text: str

    def check(self, value: float) -> bool:
        return self.lo <= value <= self.hi


@dataclass(frozen=True)
class Indicator:
    id: str
    title: str  # Table 2 wording, with transformation and seasonal adjustment
    short: str
    unit: str  # reporting unit (Table 2)
    transformation: str  # reporting transformation: qoq_saar_pct | mom_pct | yoy_pct | level | mom_change
    seasonal_adjustment: str  # SA | SAAR | NSA
    guardrail: Guardrail
    source_label: str  # Table 2 abbreviated source
    theme: str  # §3.3 block
    theme_panel: str  # theme label in the released theme_membership_bloomberg.csv
    prompt_group: str  # App. D
    frequency: str  # monthly | quarterly
    release_time_et: time  # usual release slot, America/New_York
    agency: str  # App. C
    fred_series: tuple[str, ...]  # FRED ids (first = the one the actual is derived from)
    fred_md_column: str | None  # column in FRED-MD (monthly) or FRED-QD (quarterly) vintages
    # McCracken-Ng transform code (None: not applicable, ISM diffusion indices). Home-sales levels are
    # not in FRED-MD; they take HOUST's code 4 (log level), like every housing level there.
    fred_md_tcode: int | None
    panel_scale: float  # divide the LiveMacroEval panel's A/C by this to get the reporting unit
    reference_lag_months: int  # release month - reference month (for quarterly: month after quarter end)
    beta_table9: float  # x1e-4 (Table 9)
    se_table9: float  # x1e-4 (Table 9)
    forexfactory_events: tuple[str, ...] = ()  # ForexFactory USD event names carrying this indicator

    @property
    def d(self) -> int | None:
        """ARIMA differencing order implied by the transform code (App. I): 1,4 -> 0; 2,5 -> 1; 3,6 -> 2."""
        if self.fred_md_tcode is None:
            return None
        return {1: 0, 2: 1, 3: 2, 4: 0, 5: 1, 6: 2, 7: 1}[self.fred_md_tcode]


_PCT = Guardrail(-100.0, 100.0, "percent")
_PMI = Guardrail(10.0, 99.9, "2-digit, O(10^1 to 10^2)")


def _pct(lo: float, hi: float) -> Guardrail:
    return Guardrail(lo, hi, "percent")


INDICATORS: tuple[Indicator, ...] = (
    # ---- Output core group (9) ----
    Indicator(
        "real_gdp_advance",
        "Real GDP (QoQ %, SAAR)",
        "Real GDP",
        "percent",
        "qoq_saar_pct",
        "SAAR",
        _pct(-60.0, 60.0),
        "FRED",
        "supply_production",
        "Production",
        "output_core",
        "quarterly",
        time(8, 30),
        "BEA",
        ("A191RL1Q225SBEA", "GDPC1"),
        "GDPC1",
        5,
        1.0,
        1,
        5.567,
        1.241,
        ("Advance GDP q/q",),
    ),
    Indicator(
        "industrial_production",
        "Industrial Production (MoM %, SA)",
        "Industrial production",
        "percent",
        "mom_pct",
        "SA",
        _pct(-30.0, 30.0),
        "Fed G.17",
        "supply_production",
        "Production",
        "output_core",
        "monthly",
        time(9, 15),
        "Federal Reserve Board",
        ("INDPRO",),
        "INDPRO",
        5,
        1.0,
        1,
        0.567,
        1.161,
        ("Industrial Production m/m",),
    ),
    Indicator(
        "durable_goods",
        "Durable Goods Orders (MoM %, SA)",
        "Durable goods orders",
        "percent",
        "mom_pct",
        "SA",
        _pct(-60.0, 60.0),
        "FRED",
        "supply_production",
        "Production",
        "output_core",
        "monthly",
        time(8, 30),
        "Census Bureau",
        ("DGORDER",),
        "AMDMNOx",
        5,
        1.0,
        1,
        1.099,
        0.920,
        ("Durable Goods Orders m/m",),
    ),
    Indicator(
        "ism_manufacturing",
        "ISM Manufacturing PMI (SA)",
        "ISM manufacturing",
        "index",
        "level",
        "SA",
        _PMI,
        "ISM",
        "supply_production",
        "Production",
        "output_core",
        "monthly",
        time(10, 0),
        "ISM",
        (),
        None,
        None,
        1.0,
        1,
        10.382,
        1.525,
        ("ISM Manufacturing PMI",),
    ),
    Indicator(
        "cpi",
        "CPI: All Items (YoY %)",
        "CPI",
        "percent",
        "yoy_pct",
        "NSA",
        _pct(-20.0, 30.0),
        "FRED",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "output_core",
        "monthly",
        time(8, 30),
        "BLS",
        ("CPIAUCSL", "CPIAUCNS"),
        "CPIAUCSL",
        6,
        1.0,
        1,
        -11.240,
        1.594,
        ("CPI y/y",),
    ),
    Indicator(
        "ppi",
        "PPI: Final Demand (MoM %, NSA)",
        "PPI",
        "percent",
        "mom_pct",
        "NSA",
        _pct(-20.0, 20.0),
        "FRED",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "output_core",
        "monthly",
        time(8, 30),
        "BLS",
        ("PPIFIS",),
        "WPSFD49207",
        6,
        1.0,
        1,
        -2.258,
        1.074,
        ("PPI m/m",),
    ),
    Indicator(
        "pce_price_index",
        "PCE Price Index (MoM %, SA)",
        "PCE price index",
        "percent",
        "mom_pct",
        "SA",
        _pct(-10.0, 10.0),
        "FRED",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "output_core",
        "monthly",
        time(8, 30),
        "BEA",
        ("PCEPI",),
        "PCEPI",
        6,
        1.0,
        1,
        -3.372,
        1.436,
        ("PCE Price Index m/m",),
    ),
    Indicator(
        "nonfarm_payrolls",
        "Nonfarm Payrolls (MoM change, SA)",
        "Nonfarm payrolls",
        "thousand persons",
        "mom_change",
        "SA",
        Guardrail(-30000.0, 30000.0, "2 to 3-digit typical, up to 5-digit in crises, O(10^2 to 10^5)"),
        "FRED",
        "labor_market",
        "Labor_Market",
        "output_core",
        "monthly",
        time(8, 30),
        "BLS",
        ("PAYEMS",),
        "PAYEMS",
        5,
        1000.0,
        1,
        4.937,
        1.544,
        ("Non-Farm Employment Change",),
    ),
    Indicator(
        "unemployment_rate",
        "Unemployment Rate (SA, %)",
        "Unemployment rate",
        "percent",
        "level",
        "SA",
        _pct(0.0, 40.0),
        "FRED",
        "labor_market",
        "Labor_Market",
        "output_core",
        "monthly",
        time(8, 30),
        "BLS",
        ("UNRATE",),
        "UNRATE",
        2,
        1.0,
        1,
        -1.473,
        1.814,
        ("Unemployment Rate",),
    ),
    # ---- Demand and sectoral group (7) ----
    Indicator(
        "real_pce",
        "Real PCE (MoM %, SA)",
        "Real PCE",
        "percent",
        "mom_pct",
        "SA",
        _pct(-30.0, 30.0),
        "FRED",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "demand_sectoral",
        "monthly",
        time(8, 30),
        "BEA",
        ("PCEC96", "DPCERA3M086SBEA"),
        "DPCERA3M086SBEA",
        5,
        1.0,
        1,
        2.581,
        1.538,
        # no ForexFactory event: its "Personal Spending m/m" is NOMINAL spending, not real PCE
        (),
    ),
    Indicator(
        "retail_sales",
        "Retail and Food Services Sales (MoM %, SA)",
        "Retail sales",
        "percent",
        "mom_pct",
        "SA",
        _pct(-40.0, 40.0),
        "FRED",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "demand_sectoral",
        "monthly",
        time(8, 30),
        "Census Bureau",
        ("RSAFS",),
        "RETAILx",
        5,
        1.0,
        1,
        6.095,
        1.911,
        ("Retail Sales m/m",),
    ),
    Indicator(
        "housing_starts",
        "Housing Starts (SAAR level)",
        "Housing starts",
        "thousand units, SAAR",
        "level",
        "SAAR",
        Guardrail(100.0, 9999.0, "4-digit, O(10^3 to 10^4)"),
        "FRED",
        "housing",
        "Housing",
        "demand_sectoral",
        "monthly",
        time(8, 30),
        "Census Bureau",
        ("HOUST",),
        "HOUST",
        4,
        1000.0,
        1,
        1.984,
        0.827,
        ("Housing Starts",),
    ),
    Indicator(
        "building_permits",
        "Building Permits (SAAR level)",
        "Building permits",
        "thousand units, SAAR",
        "level",
        "SAAR",
        Guardrail(100.0, 9999.0, "3 to 4-digit, O(10^3 to 10^4)"),
        "FRED",
        "housing",
        "Housing",
        "demand_sectoral",
        "monthly",
        time(8, 30),
        "Census Bureau",
        ("PERMIT",),
        "PERMIT",
        4,
        1000.0,
        1,
        -1.501,
        0.970,
        ("Building Permits",),
    ),
    Indicator(
        "existing_home_sales",
        "Existing Home Sales (SAAR level)",
        "Existing home sales",
        "thousand units, SAAR",
        "level",
        "SAAR",
        Guardrail(1000.0, 9999.0, "4-digit, O(10^3 to 10^4)"),
        "FRED",
        "housing",
        "Housing",
        "demand_sectoral",
        "monthly",
        time(10, 0),
        "National Association of Realtors",
        ("EXHOSLUSM495S",),
        None,
        4,
        1000.0,
        1,
        0.470,
        1.211,
        ("Existing Home Sales",),
    ),
    Indicator(
        "new_home_sales",
        "New Home Sales (SAAR level)",
        "New home sales",
        "thousand units, SAAR",
        "level",
        "SAAR",
        Guardrail(100.0, 9999.0, "3 to 4-digit, O(10^3 to 10^4)"),
        "FRED",
        "housing",
        "Housing",
        "demand_sectoral",
        "monthly",
        time(10, 0),
        "Census Bureau / HUD",
        ("HSN1F",),
        None,
        4,
        1000.0,
        1,
        4.063,
        1.234,
        ("New Home Sales",),
    ),
    Indicator(
        "ism_services",
        "ISM Services PMI (SA)",
        "ISM services",
        "index",
        "level",
        "SA",
        _PMI,
        "ISM",
        "demand_inflation",
        "Inflation_Consumption_Services",
        "demand_sectoral",
        "monthly",
        time(10, 0),
        "ISM",
        (),
        None,
        None,
        1.0,
        1,
        2.441,
        1.487,
        ("ISM Services PMI", "ISM Non-Manufacturing PMI"),
    ),
)

# Column order of the 16-dimensional surprise vector: the released panel's X_* order (Table 9 order).
INDICATOR_IDS: tuple[str, ...] = (
    "real_gdp_advance",
    "industrial_production",
    "durable_goods",
    "ism_manufacturing",
    "cpi",
    "ppi",
    "pce_price_index",
    "real_pce",
    "retail_sales",
    "nonfarm_payrolls",
    "unemployment_rate",
    "housing_starts",
    "building_permits",
    "existing_home_sales",
    "new_home_sales",
    "ism_services",
)

_BY_ID = {i.id: i for i in INDICATORS}
assert set(_BY_ID) == set(INDICATOR_IDS) and len(INDICATORS) == 16


class UnknownIndicatorError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


def get_indicator(indicator_id: str) -> Indicator:
    """Look up an indicator; raises :class:`UnknownIndicatorError` naming the id and the valid ids."""
    try:
        return _BY_ID[indicator_id]
    except KeyError:
        raise UnknownIndicatorError(
            f"unknown indicator_id {indicator_id!r}; expected one of {', '.join(INDICATOR_IDS)}"
        ) from None


def indicators_in_theme(theme: str) -> tuple[str, ...]:
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; expected one of {THEMES}")
    return tuple(i for i in INDICATOR_IDS if _BY_ID[i].theme == theme)


def indicators_in_group(group: str) -> tuple[str, ...]:
    """Indicators of one App. D prompt group, in Table 2 order."""
    if group not in PROMPT_GROUPS:
        raise ValueError(f"unknown prompt group {group!r}; expected one of {PROMPT_GROUPS}")
    return tuple(i.id for i in INDICATORS if i.prompt_group == group)


def catalog_frame():
    """The catalog as a polars frame with the ``indicator_catalog`` table's columns (16 rows)."""
    import polars as pl

    return pl.DataFrame(
        [
            {
                "indicator_id": i.id,
                "title": i.title,
                "unit": i.unit,
                "transformation": i.transformation,
                "seasonal_adjustment": i.seasonal_adjustment,
                "guardrail_lo": i.guardrail.lo,
                "guardrail_hi": i.guardrail.hi,
                "guardrail_text": i.guardrail.text,
                "source_label": i.source_label,
                "theme": i.theme,
                "prompt_group": i.prompt_group,
                "frequency": i.frequency,
                "release_time_et": i.release_time_et.strftime("%H:%M"),
                "agency": i.agency,
                "fred_series": ",".join(i.fred_series),
                "fred_md_column": i.fred_md_column,
                "fred_md_tcode": i.fred_md_tcode,
                "beta_table9": i.beta_table9,
                "se_table9": i.se_table9,
            }
            for i in INDICATORS
        ]
    )
