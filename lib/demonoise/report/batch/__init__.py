"""The batch: params, plan and stages, notebook execution, the further notebooks."""
