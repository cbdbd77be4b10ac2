"""The batch: params, plan, execution of the notebooks, the results store, caching."""
