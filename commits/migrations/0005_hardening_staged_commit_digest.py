from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("commits", "0004_deltav1_commit_txn_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="deltacommit",
            name="file_sha256",
            field=models.CharField(
                blank=True, default="", max_length=64,
                help_text="SHA-256 of the staged file's bytes when it was ratified (empty for older commits).",
            ),
        ),
    ]
