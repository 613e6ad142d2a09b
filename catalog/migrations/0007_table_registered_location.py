from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0006_nested_namespaces"),
    ]

    operations = [
        migrations.AddField(
            model_name="table",
            name="registered_location",
            field=models.TextField(blank=True, null=True),
        ),
    ]
