"""leaf_live.macro.forecasters"""
