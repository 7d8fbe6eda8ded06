"""Formulations: how a question is asked and scored, each a plug-in of one resumable driver.

Letters read the next token over the option labels; option texts (cloze) score every option as a
continuation of its question; written answers are generated and their letter extracted. Each says
what it asks, the resume key of each row, the typed result of one row, and how rows become
predictions; :func:`~twinkle_hf.formulations.driver.drive` does the rest for all of them.
"""
