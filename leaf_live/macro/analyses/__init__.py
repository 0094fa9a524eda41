"""The paper's remaining analyses of stored nowcasts (LiveMacroEval App. E, F, G, Q, R), one module per
appendix: plain functions over polars frames of the stored tables, no dagster, no environment reads.

* :mod:`.series` -- hourly nowcast series, first releases, sigma as of a time (shared by the others);
* :mod:`.recovery` -- App. E post-release recovery (tolerance hits, GCV smoothing spline of Fig. 7);
* :mod:`.copying` -- App. F copying tests (Tables 3-6);
* :mod:`.rationales` -- App. G rationale audit (Table 7, citation domains, arithmetic recomputation);
* :mod:`.cross_model` -- App. Q cross-model errors (Table 14) and nowcast path summaries (Table 15);
* :mod:`.revisions` -- App. R revision attribution (Eq. 15, Eq. 16);
* :mod:`.report` -- Markdown report of the analysis tables beside the paper's GPT-5 figures.
"""
