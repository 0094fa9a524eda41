"""leaf_live.macro.scoring"""
