import re

import django.db.models.deletion
from django.db import migrations, models

# A frozen copy of catalog.services.names.quote_part as it was when this migration was written:
# a migration must fill the paths the same way whenever it runs, whatever the live code becomes.
_NEEDS_QUOTES = re.compile(r"[.\s]")


def quote_part(part: str) -> str:
    if _NEEDS_QUOTES.search(part):
        return "`" + part.replace("`", "``") + "`"
    return part


def fill_paths(apps, schema_editor):
    Schema = apps.get_model("catalog", "Schema")
    for schema in Schema.objects.all().only("id", "name"):
        Schema.objects.filter(id=schema.id).update(path=quote_part(schema.name))


def fill_generic_formats(apps, schema_editor):
    Table = apps.get_model("catalog", "Table")
    Table.objects.exclude(data_source_format__in=[None, "ICEBERG"]).exclude(
        table_type__in=["VIEW", "MATERIALIZED_VIEW", "METRIC_VIEW"]).update(
        generic_format=models.functions.Lower("data_source_format"))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0005_polaris_policies"),
    ]

    operations = [
        migrations.AddField(
            model_name="schema",
            name="parent",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="children", to="catalog.schema"),
        ),
        migrations.AddField(
            model_name="schema",
            name="path",
            field=models.TextField(default="", editable=False),
            preserve_default=False,
        ),
        migrations.RunPython(fill_paths, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="schema", name="uniq_schema_name"),
        migrations.AddConstraint(
            model_name="schema",
            constraint=models.UniqueConstraint(fields=("catalog", "path"), name="uniq_schema_path"),
        ),
        migrations.AlterModelOptions(name="schema", options={"ordering": ["catalog__name", "path"]}),
        migrations.AddField(
            model_name="table",
            name="generic_format",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.RunPython(fill_generic_formats, migrations.RunPython.noop),
        *[migrations.AlterModelOptions(name=name, options={"ordering": ["schema__catalog__name", "schema__path", "name"]})
          for name in ("function", "registeredmodel", "table", "volume")],
        migrations.AlterModelOptions(name="policy", options={
            "ordering": ["schema__catalog__name", "schema__path", "name"], "verbose_name_plural": "policies"}),
    ]
