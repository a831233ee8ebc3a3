# /// script
# dependencies = ["skill-magics-absent-report-kit>=1"]
# ///
import skill_magics_absent_report_kit

skill_magics_absent_report_kit.render()
