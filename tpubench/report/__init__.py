"""Reports and decisions from run records: no TensorFlow needed.

load (records -> runs) -> group (configurations, honest comparisons) ->
stats (median and interval) -> compare (the numbers behind each table and
plot) -> tables / plots / html (renderings); published (figures of the
studies, kept apart from measurements); advise (cheapest configuration that
meets a deadline); cli (the two subcommands' entry points).
"""
