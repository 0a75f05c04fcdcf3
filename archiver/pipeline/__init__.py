"""One lease, from the frontier's hand-out to its outcome: admitted, captured, what it leads to
discovered, and its outcome decided; a page loaded in the browser has every request it makes
answered the same way. Built and driven by :mod:`archiver.run`.
"""
