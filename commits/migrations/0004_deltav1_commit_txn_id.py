from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("commits", "0003_polaris_notification_timestamp"),
        ("catalog", "0004_securable_created_at_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="deltacommit",
            name="txn_id",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddIndex(
            model_name="deltacommit",
            index=models.Index(fields=["table", "txn_id"], name="delta_commit_txn"),
        ),
    ]
