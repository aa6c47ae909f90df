#include "runs/run_records.h"

#include <myelin/train/metrics.h>

#include <QDateTime>
#include <QTimeZone>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <unordered_map>

namespace myelin::ui {

namespace {
bool sameNumber(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool sameOptional(const std::optional<double>& a, const std::optional<double>& b) {
    return a.has_value() == b.has_value() && (!a || sameNumber(*a, *b));
}

// Shortest text that reads back to the same double; "nan", "inf", "-inf".
QByteArray exactNumber(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
    return QByteArray(buffer, int(end - buffer));
}

QByteArray csvField(const QString& text) {
    QByteArray utf8 = text.toUtf8();
    if (!utf8.contains(',') && !utf8.contains('"') && !utf8.contains('\n') && !utf8.contains('\r'))
        return utf8;
    utf8.replace("\"", "\"\"");
    return "\"" + utf8 + "\"";
}

QString utcText(double seconds) {
    return QDateTime::fromMSecsSinceEpoch(qint64(std::llround(seconds * 1000)), QTimeZone::utc())
        .toString(Qt::ISODate);
}

QString originName(store::RunOrigin origin) {
    switch (origin) {
    case store::RunOrigin::Fresh:
        return QStringLiteral("fresh");
    case store::RunOrigin::Resumed:
        return QStringLiteral("resumed");
    case store::RunOrigin::Forked:
        return QStringLiteral("forked");
    }
    return {};
}
} // namespace

bool KeyMetricValues::operator==(const KeyMetricValues& other) const {
    return present == other.present && sameNumber(best, other.best) &&
           sameNumber(last, other.last) && lastStep == other.lastStep;
}

std::vector<RunRecord> readRunRecords(store::RunStore& store) {
    std::vector<store::RunSummary> summaries = store.list_runs();
    std::vector<RunRecord> records(summaries.size());
    std::unordered_map<int64_t, size_t> index;
    for (size_t i = 0; i < summaries.size(); ++i) {
        records[i].run = std::move(summaries[i].run);
        index.emplace(records[i].run.id, i);
        for (const auto& latest : summaries[i].latest_metrics)
            for (size_t k = 0; k < kKeyMetrics.size(); ++k)
                if (latest.key == kKeyMetrics[k].key) {
                    KeyMetricValues& m = records[i].metrics[k];
                    m.present = true;
                    m.last = latest.value;
                    m.lastStep = latest.step;
                }
    }
    for (size_t k = 0; k < kKeyMetrics.size(); ++k) {
        for (const store::MetricRange& range : store.metric_ranges(kKeyMetrics[k].key)) {
            auto it = index.find(range.run);
            if (it == index.end()) continue; // a run created after list_runs read
            records[it->second].metrics[k].best =
                train::higher_is_better(kKeyMetrics[k].key) ? range.max : range.min;
        }
    }
    return records;
}

bool sameDisplay(const RunRecord& a, const RunRecord& b) {
    const store::Run &x = a.run, &y = b.run;
    return x.id == y.id && x.name == y.name && x.status == y.status &&
           sameNumber(x.started_at, y.started_at) && sameOptional(x.ended_at, y.ended_at) &&
           x.parent_run == y.parent_run && x.parent_checkpoint == y.parent_checkpoint &&
           x.host == y.host && x.device == y.device && x.threads == y.threads && x.pid == y.pid &&
           x.error == y.error && x.note == y.note && x.tags == y.tags &&
           x.project_path == y.project_path && x.origin == y.origin &&
           x.branch_step == y.branch_step && a.metrics == b.metrics;
}

QString statusText(store::RunStatus status) {
    switch (status) {
    case store::RunStatus::Running:
        return QStringLiteral("Running");
    case store::RunStatus::Finished:
        return QStringLiteral("Finished");
    case store::RunStatus::Stopped:
        return QStringLiteral("Stopped");
    case store::RunStatus::Failed:
        return QStringLiteral("Failed");
    case store::RunStatus::Interrupted:
        return QStringLiteral("Interrupted");
    }
    return {};
}

QString lineageText(const store::Run& run) {
    if (run.origin == store::RunOrigin::Fresh) return {};
    const bool forked = run.origin == store::RunOrigin::Forked;
    if (run.branch_step)
        return (forked ? QStringLiteral("forked at step %1") : QStringLiteral("resumed at step %1"))
            .arg(*run.branch_step);
    if (run.parent_run)
        return (forked ? QStringLiteral("forked from #%1") : QStringLiteral("resumed from #%1"))
            .arg(*run.parent_run);
    return QStringLiteral("resumed from a file");
}

QString durationText(double seconds) {
    if (!(seconds >= 0)) return {};
    const qint64 s = qint64(seconds + 0.5);
    if (s < 60) return QStringLiteral("%1 s").arg(s);
    if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg(s % 3600 / 60, 2, 10, QChar('0'));
}

QString metricText(double value) {
    if (std::isnan(value)) return QStringLiteral("nan");
    return QString::number(value, 'g', 4);
}

QString tagsText(const std::vector<std::string>& tags) {
    QStringList parts;
    for (const auto& tag : tags)
        parts << QString::fromStdString(tag);
    return parts.join(QStringLiteral(", "));
}

QString countText(qint64 n, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? one : many));
}

double runSeconds(const store::Run& run, double now) {
    const double end = run.ended_at                              ? *run.ended_at
                       : run.status == store::RunStatus::Running ? now
                                                                 : run.started_at;
    return std::max(0.0, end - run.started_at);
}

std::string normalProjectPath(const QString& path) {
    if (path.isEmpty()) return {};
    return std::filesystem::absolute(path.toStdString()).lexically_normal().string();
}

QByteArray runsCsv(const std::vector<const RunRecord*>& records, double now) {
    QByteArray out = "id,name,status,parent,origin,branch_step,started,ended,duration_s,device,"
                     "threads,host,project";
    for (const auto& metric : kKeyMetrics)
        out += QByteArray(",best_") + metric.key + ",last_" + metric.key;
    out += ",tags,note\r\n";
    for (const RunRecord* record : records) {
        const store::Run& r = record->run;
        QList<QByteArray> fields;
        fields << QByteArray::number(qint64(r.id)) << csvField(QString::fromStdString(r.name))
               << QByteArray(store::status_name(r.status).data(),
                             qsizetype(store::status_name(r.status).size()))
               << (r.parent_run ? QByteArray::number(qint64(*r.parent_run)) : QByteArray())
               << originName(r.origin).toUtf8()
               << (r.branch_step ? QByteArray::number(qint64(*r.branch_step)) : QByteArray())
               << utcText(r.started_at).toUtf8()
               << (r.ended_at ? utcText(*r.ended_at).toUtf8() : QByteArray())
               << exactNumber(runSeconds(r, now)) << csvField(QString::fromStdString(r.device))
               << QByteArray::number(r.threads) << csvField(QString::fromStdString(r.host))
               << csvField(QString::fromStdString(r.project_path));
        for (const KeyMetricValues& m : record->metrics) {
            fields << (m.present ? exactNumber(m.best) : QByteArray());
            fields << (m.present ? exactNumber(m.last) : QByteArray());
        }
        fields << csvField(tagsText(r.tags)) << csvField(QString::fromStdString(r.note));
        out += fields.join(',') + "\r\n";
    }
    return out;
}

} // namespace myelin::ui
