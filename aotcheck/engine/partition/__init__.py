"""partition"""
