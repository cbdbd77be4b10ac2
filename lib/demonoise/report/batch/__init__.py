"""The batch: params, plan and stages, notebook execution, the results store, caching,
the further notebooks (overview, extras)."""
