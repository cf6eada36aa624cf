mod captures;
mod machine;
mod packet;
mod settings;
mod sync;

use fulcrum_config::lexer::Options;

use super::InstanceSettings;

/// The configuration `text`, read with a fixed random seed (`${_RANDOM}`
/// the same at every run).
pub(crate) fn configuration(text: &str) -> fulcrum_config::model::Config {
    let options = Options {
        config_id: None,
        all_config: false,
        random_seed: Some(1),
    };
    fulcrum_config::load_str("test.conf", text, &options).config
}

/// The settings of the only instance in `text`.
fn settings_of(text: &str) -> InstanceSettings {
    let configuration = configuration(text);
    let [instance] = configuration.vrrp_instances.as_slice() else {
        panic!("one instance expected in {text}");
    };
    InstanceSettings::from_model(instance, &configuration.global.vrrp).unwrap()
}
