"""leaf_live.forecasters"""
