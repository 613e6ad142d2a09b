# Every time Django's own admin pages print reads as the console's do: UTC, ISO, to the second
# (catalog/templatetags/console_format.py), never "1:45 a.m.".
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
NUMBER_GROUPING = 3
THOUSAND_SEPARATOR = ","
