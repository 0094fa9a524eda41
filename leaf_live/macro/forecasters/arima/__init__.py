"""Auto-ARIMA baseline (LiveMacroEval App. I, §3.5), in three modules: :mod:`.estimator` (likelihood, fit,
AIC grid), :mod:`.histories` (series as seen at issue time from FRED-MD/QD vintages or first releases) and
:mod:`.nowcasts` (one nowcast per window, the batch entry of the ``arima_nowcasts`` asset)."""
