def describe_schedule(schedule, *, lang):
    return ""
